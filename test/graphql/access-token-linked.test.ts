// A token's READ and SUBSCRIBE on a workspace reach what is linked to it, not only what was
// admitted into it: a run of another workspace linked to it, and a conversation linked to it (with
// its runs) read through run(id), node(id) and the workspace's link targets, and can be watched
// with runEvents, runOutput and traceUpdates. A run of the same principal linked nowhere stays
// null and NOT_FOUND; acting on a linked run (cancelRun) still needs it granted.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DossierRequestError } from "../../sdk/client.js";
import {
  CancelRunDocument,
  ConversationDocument,
  CreateAccessTokenDocument,
  LinkToWorkspaceDocument,
  NodeDocument,
  RunDocument,
  RunEventsDocument,
  RunOutputDocument,
  TraceUpdatesDocument,
  WorkspaceLinksDocument,
} from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, startConversation } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** How a subscription's first step ends: an event, its end, still open after a while, or the code it was refused with. */
const firstOf = (pending: Promise<IteratorResult<unknown>>): Promise<string> =>
  Promise.race([
    pending.then(
      (step) => (step.done ? "done" : "event"),
      (error: unknown) => (error instanceof DossierRequestError ? String(error.errors[0]?.extensions?.code ?? error.message) : String(error)),
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve("open"), 1_500)),
  ]);

describe.each(backends)("a workspace token and what is linked to the workspace, on %s", (backend) => {
  let t: TestApp;
  let token: string;
  const ids = { workspace: "", linkedRun: "", linkedConversation: "", runInLinkedConversation: "", unlinkedRun: "" };

  beforeAll(async () => {
    t = await startTestApp(backend, {
      authRequired: true,
      listen: true,
      runtime: {
        model: new ScriptedModel({ name: "answers", steps: () => ({ content: "An answer." }) }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-token-linked-")),
      },
    });
    const client = t.as(await t.createPrincipal("Team backend"));
    const granted = await createWorkspace(client, "granted goal");
    const elsewhere = await createWorkspace(client, "elsewhere goal");
    const linkedRun = (await admit(client, { workspaceId: elsewhere.id, question: "Linked later" })).run;
    const unlinkedRun = (await admit(client, { workspaceId: elsewhere.id, question: "Never linked" })).run;
    const conversation = await startConversation(client, "Linked conversation");
    const runInConversation = (await admit(client, { conversationId: conversation.id, question: "In the linked conversation" })).run;
    for (const run of [linkedRun, unlinkedRun, runInConversation]) expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    for (const targetId of [linkedRun.id, conversation.id]) {
      expectType((await client.request(LinkToWorkspaceDocument, { input: { workspaceId: granted.id, targetId } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    }
    Object.assign(ids, {
      workspace: granted.id,
      linkedRun: linkedRun.id,
      linkedConversation: conversation.id,
      runInLinkedConversation: runInConversation.id,
      unlinkedRun: unlinkedRun.id,
    });
    token = expectType(
      (
        await client.request(CreateAccessTokenDocument, {
          input: { grants: [{ resourceId: granted.id, operations: ["READ", "SUBSCRIBE", "CANCEL"] }] },
        })
      ).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  });
  afterAll(async () => t?.close());

  it("reads linked runs and conversations through run(id), node(id) and the workspace's links; an unlinked run stays null", async () => {
    const holder = t.as(token);
    for (const id of [ids.linkedRun, ids.runInLinkedConversation]) {
      const run = (await holder.request(RunDocument, { id })).node;
      expect(run?.__typename === "Run" ? run.id : run).toBe(id);
      expect((await holder.request(NodeDocument, { id })).node?.__typename).toBe("Run");
    }
    const conversation = (await holder.request(ConversationDocument, { id: ids.linkedConversation })).node;
    if (conversation?.__typename !== "Conversation") throw new Error(`expected the linked conversation, got ${JSON.stringify(conversation)}`);
    expect(conversation.messages.edges.length).toBeGreaterThan(0);
    const links = (await holder.request(WorkspaceLinksDocument, { workspaceId: ids.workspace, first: 10 })).workspace?.links.edges ?? [];
    expect(links.map((e) => e.node.target?.id).sort()).toEqual([ids.linkedRun, ids.linkedConversation].sort());

    expect((await holder.request(RunDocument, { id: ids.unlinkedRun })).node).toBeNull();
    expect((await holder.request(NodeDocument, { id: ids.unlinkedRun })).node).toBeNull();
    // A link lets the token read and watch, not act: cancelling needs the run granted or in the workspace.
    const cancelled = (await holder.request(CancelRunDocument, { input: { runId: ids.linkedRun } })).cancelRun;
    expect(cancelled.__typename).toBe("NotFoundError");
  });

  it("watches a linked run with runEvents, runOutput and traceUpdates; an unlinked run is NOT_FOUND", async () => {
    const socket = t.connect(token);
    const watch = (runId: string) =>
      Promise.all([
        firstOf(socket.subscribe(RunEventsDocument, { runId }).next()),
        firstOf(socket.subscribe(RunOutputDocument, { runId }).next()),
        firstOf(socket.subscribe(TraceUpdatesDocument, { runId }).next()),
      ]);
    for (const runId of [ids.linkedRun, ids.runInLinkedConversation]) {
      const [events, output, trace] = await watch(runId);
      // A settled run delivers its status once and its trace from the start.
      expect([events, trace]).toEqual(["event", "event"]);
      expect(["event", "done", "open"]).toContain(output);
    }
    expect(await watch(ids.unlinkedRun)).toEqual(["NOT_FOUND", "NOT_FOUND", "NOT_FOUND"]);
  });
});
