// End to end over real sockets: a server on port 0, SDK clients over HTTP and graphql-ws.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ArchiveWorkspaceDocument,
  DeleteWorkspaceDocument,
  LinkToWorkspaceDocument,
  UnlinkFromWorkspaceDocument,
  RestoreWorkspaceDocument,
  UpdateGoalDocument,
  WorkspaceEventsDocument,
  type WorkspaceEventsSubscription,
} from "../../sdk/generated/graphql.js";
import { DossierRequestError } from "../../sdk/client.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace as createWorkspaceFixture, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, withTimeout } from "../support/wait.js";

describe.each(backends)("a live server on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { listen: true });
  });
  afterAll(async () => t?.close());

  const createWorkspace = (client = t.connect()) => createWorkspaceFixture(client, "v1");

  /** Collects `count` events from a subscription that is known to be active on the server. */
  async function watch(workspaceId: string, count: number) {
    const subscriber = t.connect();
    const events: WorkspaceEventsSubscription["workspaceEvents"][] = [];
    const iterator = subscriber.subscribe(WorkspaceEventsDocument, { workspaceId });
    const listening = t.listeners();
    const first = iterator.next();
    // Publish only once the server has registered this subscription on its event bus.
    await waitFor(() => t.listeners() > listening);
    const done = (async (): Promise<typeof events> => {
      let next = await first;
      while (!next.done) {
        events.push(next.value.workspaceEvents);
        if (events.length === count) break;
        next = await iterator.next();
      }
      await iterator.return?.();
      return events;
    })();
    return { done };
  }

  it("delivers goal changes, archive and restore made by another client, in order", async () => {
    const writer = t.connect();
    const workspace = await createWorkspace(writer);
    const received = await watch(workspace.id, 3);

    const update = await writer.request(UpdateGoalDocument, {
      input: { workspaceId: workspace.id, statement: "v2: narrower", expectedVersion: 1 },
    });
    expect(update.updateGoal.__typename).toBe("UpdateGoalSuccess");
    await writer.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await writer.request(RestoreWorkspaceDocument, { input: { workspaceId: workspace.id } });

    const events = await withTimeout(received.done, 10_000);
    expect(events.map((event) => event.kind)).toEqual(["GOAL_UPDATED", "ARCHIVED", "RESTORED"]);
    expect(events[0]).toMatchObject({ goal: { version: 2, statement: "v2: narrower" }, workspace: { id: workspace.id } });
    expect(events[1]?.goal).toBeNull();
    expect(events[2]?.workspace?.status).toBe("ACTIVE");
  });

  it("reports links, admissions, unlinks and the delete", async () => {
    const writer = t.connect();
    const workspace = await createWorkspace(writer);
    const received = await watch(workspace.id, 5);
    const conversation = await startConversation(writer, "Linked chat");
    expect(
      (await writer.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: conversation.id } })).linkToWorkspace.__typename,
    ).toBe("LinkToWorkspaceSuccess");
    const { run } = await admit(writer, { workspaceId: workspace.id, question: "Watched admission" });
    await writer.request(UnlinkFromWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: conversation.id } });
    await writer.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } });

    const events = await withTimeout(received.done, 10_000);
    expect(events.map((e) => [e.kind, e.linkKind, e.linkTargetId])).toEqual([
      ["LINKED", "CONVERSATION", conversation.id],
      ["LINKED", "RUN", run.id],
      ["RUN_ADMITTED", null, null],
      ["UNLINKED", "CONVERSATION", conversation.id],
      ["DELETED", null, null],
    ]);
    expect(events[2]?.run).toMatchObject({ id: run.id, question: "Watched admission", status: "QUEUED" });
    expect(events[4]).toMatchObject({ workspaceId: workspace.id, workspace: null });
  });

  it("does not deliver a rejected update", async () => {
    const writer = t.connect();
    const workspace = await createWorkspace(writer);
    const received = await watch(workspace.id, 1);
    const stale = await writer.request(UpdateGoalDocument, {
      input: { workspaceId: workspace.id, statement: "stale", expectedVersion: 5 },
    });
    expect(stale.updateGoal.__typename).toBe("StaleVersionError");
    await writer.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const [event] = await withTimeout(received.done, 10_000);
    expect(event?.kind).toBe("ARCHIVED");
  });

  it("refuses a subscription to a workspace that does not exist", async () => {
    const iterator = t.connect().subscribe(WorkspaceEventsDocument, {
      workspaceId: encodeGlobalId("Workspace", "missing"),
    });
    await expect(iterator.next()).rejects.toSatisfy((error) => error instanceof DossierRequestError && error.message === "Workspace not found.");
  });

  it("refuses subscriptions beyond the per-connection cap, and accepts one again after another closes", async () => {
    const capped = await startTestApp(backend, { listen: true, maxSubscriptionsPerConnection: 2 });
    try {
      const client = capped.connect();
      const workspace = await createWorkspaceFixture(client, "cap");
      // The app's own listeners (revoked keys) are there before any subscription.
      const base = capped.listeners();
      const open = [0, 1].map(() => client.subscribe(WorkspaceEventsDocument, { workspaceId: workspace.id }));
      const pending = open.map((iterator) => iterator.next());
      await waitFor(() => capped.listeners() === base + 2);
      const third = client.subscribe(WorkspaceEventsDocument, { workspaceId: workspace.id });
      await expect(third.next()).rejects.toThrow(/already has 2 subscriptions open/);
      await open[0]!.return?.();
      const fourth = client.subscribe(WorkspaceEventsDocument, { workspaceId: workspace.id });
      const fourthNext = fourth.next();
      await waitFor(() => capped.listeners() === base + 2);
      await client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
      expect((await withTimeout(fourthNext, 5_000)).value?.workspaceEvents.kind).toBe("ARCHIVED");
      expect((await withTimeout(pending[1]!, 5_000)).value?.workspaceEvents.kind).toBe("ARCHIVED");
    } finally {
      await capped.close();
    }
  });

  it("serves GraphiQL, /health and /ready on the same port", async () => {
    const base = t.server!.url.replace(/\/graphql$/, "");
    const graphiql = await fetch(t.server!.url, { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(200);
    expect(await graphiql.text()).toContain("Dossier");
    expect((await fetch(`${base}/health`)).status).toBe(200);
    const ready = await fetch(`${base}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });
});
