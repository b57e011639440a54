// A6: principals are isolated. One principal's objects are invisible to another, through
// every query, mutation and subscription; a wrong key is always rejected, never downgraded.
import { print } from "graphql";
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createClient, type DossierClient, DossierRequestError } from "../../sdk/client.js";
import {
  AdmitRunDocument,
  ArchiveWorkspaceDocument,
  ArtifactDocument,
  ArtifactsDocument,
  ConversationDocument,
  ConversationsDocument,
  CreateApiKeyDocument,
  CreateArtifactDocument,
  CreateWorkspaceDocument,
  DeleteWorkspaceDocument,
  GoalVersionsDocument,
  LinkToWorkspaceDocument,
  NodeDocument,
  PublicationDocument,
  PublicationsDocument,
  PublishVersionDocument,
  RestoreWorkspaceDocument,
  RetainArtifactDocument,
  RunDocument,
  RunsDocument,
  StartConversationDocument,
  UnlinkFromWorkspaceDocument,
  UpdateGoalDocument,
  ViewerDocument,
  WorkspaceDocument,
  WorkspaceEventsDocument,
  WorkspaceLinksDocument,
  WorkspacesDocument,
} from "../../sdk/generated/graphql.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { settled } from "../support/scripted-runs.js";
import { waitFor, withTimeout } from "../support/wait.js";

const SECRET_TITLE = "Alice's confidential cell-capacity findings";
const SECRET_CONTENT = "Plant X in Saxony slips to 2028 (source: private call).";

const MISSING_KEY = "An API key is required: send `Authorization: Bearer <key>`.";
const MALFORMED = "The Authorization header must be `Bearer <key>`.";

/** The payload narrowed to `typename`, or a failed test naming what came back instead. */
function expectType<T extends { __typename: string }, N extends T["__typename"]>(payload: T, typename: N): Extract<T, { __typename: N }> {
  if (payload.__typename !== typename) throw new Error(`expected ${typename}, got ${JSON.stringify(payload)}`);
  return payload as Extract<T, { __typename: N }>;
}

/** A request's rejection with exactly this GraphQL error message. */
async function expectRejected(promise: Promise<unknown>, message: string): Promise<DossierRequestError> {
  const error = await promise.then(
    (data) => {
      throw new Error(`expected a rejection with "${message}", got ${JSON.stringify(data)}`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DossierRequestError);
  expect((error as DossierRequestError).message).toBe(message);
  return error as DossierRequestError;
}

describe.each(backends)("principal isolation on %s", (backend) => {
  let t: TestApp;
  let alice: DossierClient;
  let bob: DossierClient;
  let aliceKey: string;
  let bobKey: string;
  // Alice's objects.
  let a: {
    principalId: string;
    apiKeyId: string;
    workspaceId: string;
    goalVersionId: string;
    conversationId: string;
    publicationId: string;
    publicationVersionId: string;
    artifactId: string;
    runId: string;
    messageId: string;
    linkIds: string[];
  };

  beforeAll(async () => {
    // A worker answers Alice's run, so her conversation holds messages to attack. The answer is
    // blank, so nothing is published: her objects stay exactly the ones made below.
    t = await startTestApp(backend, {
      authRequired: true,
      listen: true,
      runtime: {
        model: new ScriptedModel({ name: "blank", steps: () => ({ content: " " }) }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-isolation-")),
      },
    });
    aliceKey = await t.createPrincipal("Alice");
    bobKey = await t.createPrincipal("Bob");
    alice = t.as(aliceKey);
    bob = t.as(bobKey);

    const viewer = (await alice.request(ViewerDocument, {})).viewer;
    const workspace = expectType(
      (await alice.request(CreateWorkspaceDocument, { input: { title: "Alice's batteries", goal: "Alice's goal v1" } })).createWorkspace,
      "CreateWorkspaceSuccess",
    ).workspace;
    const conversation = expectType(
      (await alice.request(StartConversationDocument, { input: { title: "Alice's conversation" } })).startConversation,
      "StartConversationSuccess",
    ).conversation;
    const published = expectType(
      (await alice.request(PublishVersionDocument, { input: { title: SECRET_TITLE, content: SECRET_CONTENT } })).publishVersion,
      "PublishVersionSuccess",
    ).version;
    const artifact = expectType(
      (
        await alice.request(CreateArtifactDocument, {
          input: { name: "alice-report.html", mimeType: "text/html", content: "<h1>Alice's report</h1>" },
        })
      ).createArtifact,
      "CreateArtifactSuccess",
    ).artifact;
    const run = expectType(
      (
        await alice.request(AdmitRunDocument, {
          input: {
            workspaceId: workspace.id,
            conversationId: conversation.id,
            question: "Alice's question",
            materials: [{ publicationId: published.publication.id, version: 1 }],
          },
        })
      ).admitRun,
      "AdmitRunSuccess",
    ).run;
    for (const targetId of [conversation.id, published.publication.id, artifact.id]) {
      expectType((await alice.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    }
    expect((await settled(alice, run.id)).status).toBe("SUCCEEDED");
    const log = await alice.request(ConversationDocument, { id: conversation.id });
    if (log.node?.__typename !== "Conversation") throw new Error("setup: Alice cannot read her conversation");
    const links = await alice.request(WorkspaceLinksDocument, { workspaceId: workspace.id, first: 10 });

    a = {
      principalId: viewer.id,
      apiKeyId: viewer.apiKeys.edges.map((edge) => edge.node)[0]!.id,
      workspaceId: workspace.id,
      goalVersionId: workspace.goal.id,
      conversationId: conversation.id,
      publicationId: published.publication.id,
      publicationVersionId: published.id,
      artifactId: artifact.id,
      runId: run.id,
      messageId: log.node.messages.edges[0]!.node.id,
      linkIds: links.workspace!.links.edges.map((e) => e.node.id),
    };
    expect(a.linkIds).toHaveLength(4);
  });
  afterAll(async () => t?.close());

  it("shows Bob none of Alice's objects: node(id) and workspace(id) are null, every list is empty", async () => {
    const ids = [
      a.principalId,
      a.apiKeyId,
      a.workspaceId,
      a.goalVersionId,
      a.conversationId,
      a.publicationId,
      a.publicationVersionId,
      a.artifactId,
      a.runId,
      a.messageId,
      ...a.linkIds,
    ];
    for (const id of ids) {
      // Alice can read each of them; Bob cannot tell them from ids that name nothing.
      expect((await alice.request(NodeDocument, { id })).node?.id).toBe(id);
      expect((await bob.request(NodeDocument, { id })).node).toBeNull();
    }
    expect((await bob.request(RunDocument, { id: a.runId })).node).toBeNull();
    expect((await bob.request(ArtifactDocument, { id: a.artifactId })).node).toBeNull();
    expect((await bob.request(ConversationDocument, { id: a.conversationId })).node).toBeNull();
    expect((await bob.request(PublicationDocument, { id: a.publicationId, version: 1 })).node).toBeNull();

    expect((await bob.request(WorkspaceDocument, { id: a.workspaceId })).workspace).toBeNull();
    expect((await bob.request(GoalVersionsDocument, { workspaceId: a.workspaceId })).workspace).toBeNull();
    expect((await bob.request(WorkspaceLinksDocument, { workspaceId: a.workspaceId })).workspace).toBeNull();

    expect((await bob.request(WorkspacesDocument, {})).workspaces.edges).toEqual([]);
    expect((await bob.request(RunsDocument, {})).runs.edges).toEqual([]);
    expect((await bob.request(PublicationsDocument, {})).publications.edges).toEqual([]);
    expect((await bob.request(ConversationsDocument, {})).conversations.edges).toEqual([]);
    expect((await bob.request(ArtifactsDocument, {})).artifacts.edges).toEqual([]);

    const bobViewer = (await bob.request(ViewerDocument, {})).viewer;
    expect(bobViewer.name).toBe("Bob");
    expect(bobViewer.id).not.toBe(a.principalId);
  });

  it("refuses every change Bob attempts on Alice's objects with NotFoundError, and changes nothing", async () => {
    const bobWorkspace = expectType(
      (await bob.request(CreateWorkspaceDocument, { input: { title: "Bob's", goal: "Bob's goal" } })).createWorkspace,
      "CreateWorkspaceSuccess",
    ).workspace;
    const bobConversation = expectType(
      (await bob.request(StartConversationDocument, { input: { title: "Bob's conversation" } })).startConversation,
      "StartConversationSuccess",
    ).conversation;
    const workspaceId = a.workspaceId;

    const notFound = <T extends { __typename: string }>(payload: T) =>
      expectType(payload as T & { __typename: "NotFoundError"; message: string }, "NotFoundError").message;

    // Bob gets exactly what he would get for a workspace that never existed.
    const missingWorkspace = encodeGlobalId("Workspace", "00000000-0000-0000-0000-000000000000");
    const forMissing = notFound(
      (await bob.request(UpdateGoalDocument, { input: { workspaceId: missingWorkspace, statement: "x", expectedVersion: 1 } })).updateGoal,
    );
    expect(notFound((await bob.request(UpdateGoalDocument, { input: { workspaceId, statement: "Bob's goal", expectedVersion: 1 } })).updateGoal)).toBe(
      forMissing,
    );
    notFound((await bob.request(ArchiveWorkspaceDocument, { input: { workspaceId } })).archiveWorkspace);
    notFound((await bob.request(RestoreWorkspaceDocument, { input: { workspaceId } })).restoreWorkspace);
    notFound((await bob.request(DeleteWorkspaceDocument, { input: { workspaceId } })).deleteWorkspace);

    // Links: Bob's object into Alice's workspace, and Alice's objects into Bob's workspace.
    notFound((await bob.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId: bobConversation.id } })).linkToWorkspace);
    for (const targetId of [a.conversationId, a.runId, a.publicationId, a.artifactId]) {
      notFound((await bob.request(LinkToWorkspaceDocument, { input: { workspaceId: bobWorkspace.id, targetId } })).linkToWorkspace);
    }
    notFound((await bob.request(UnlinkFromWorkspaceDocument, { input: { workspaceId, targetId: a.runId } })).unlinkFromWorkspace);
    notFound((await bob.request(RetainArtifactDocument, { input: { workspaceId: bobWorkspace.id, artifactId: a.artifactId } })).retainArtifact);

    // Admission: in Alice's workspace, in Alice's conversation, with Alice's publication as material.
    notFound((await bob.request(AdmitRunDocument, { input: { workspaceId, question: "Bob's question" } })).admitRun);
    notFound((await bob.request(AdmitRunDocument, { input: { conversationId: a.conversationId, question: "Bob's question" } })).admitRun);
    const material = notFound(
      (
        await bob.request(AdmitRunDocument, {
          input: { question: "Bob's question", materials: [{ publicationId: a.publicationId, version: 1 }] },
        })
      ).admitRun,
    );
    expect(material).not.toContain(SECRET_TITLE);
    expect(material).not.toContain(SECRET_CONTENT);
    expect(material).not.toContain("Alice");

    // Publishing: a new version of Alice's publication, or one built on hers, or one from her run.
    notFound((await bob.request(PublishVersionDocument, { input: { publicationId: a.publicationId, content: "Bob's" } })).publishVersion);
    notFound(
      (
        await bob.request(PublishVersionDocument, {
          input: { title: "Bob's", content: "Bob's", sources: [{ publicationId: a.publicationId, version: 1 }] },
        })
      ).publishVersion,
    );
    notFound((await bob.request(PublishVersionDocument, { input: { title: "Bob's", content: "Bob's", originRunId: a.runId } })).publishVersion);

    // Nothing Bob tried left anything behind on his side either.
    expect((await bob.request(RunsDocument, {})).runs.edges).toEqual([]);
    expect((await bob.request(PublicationsDocument, {})).publications.edges).toEqual([]);
    expect((await bob.request(ConversationsDocument, {})).conversations.edges.map((e) => e.node.id)).toEqual([bobConversation.id]);
    expect((await bob.request(WorkspaceLinksDocument, { workspaceId: bobWorkspace.id })).workspace?.links.edges).toEqual([]);

    // Alice's workspace is as she left it, and she still sees everything.
    const workspace = (await alice.request(WorkspaceDocument, { id: workspaceId })).workspace;
    expect(workspace).toMatchObject({ status: "ACTIVE", archivedAt: null, goal: { version: 1, statement: "Alice's goal v1" } });
    const versions = (await alice.request(GoalVersionsDocument, { workspaceId })).workspace?.goalVersions.edges;
    expect(versions?.map((e) => e.node.version)).toEqual([1]);
    const links = (await alice.request(WorkspaceLinksDocument, { workspaceId, first: 10 })).workspace!.links.edges;
    expect(links.map((e) => e.node.id).sort()).toEqual([...a.linkIds].sort());
    expect(links.map((e) => e.node.target?.id).sort()).toEqual([a.conversationId, a.runId, a.publicationId, a.artifactId].sort());

    expect((await alice.request(WorkspacesDocument, {})).workspaces.edges.map((e) => e.node.id)).toEqual([workspaceId]);
    const runs = (await alice.request(RunsDocument, {})).runs.edges.map((e) => e.node);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      id: a.runId,
      frozenGoal: { version: 1 },
      workspace: { id: workspaceId },
      conversation: { id: a.conversationId },
      materials: [{ position: 0, publicationVersion: { id: a.publicationVersionId, version: 1 } }],
    });
    expect((await alice.request(PublicationsDocument, {})).publications.edges.map((e) => [e.node.id, e.node.title])).toEqual([[a.publicationId, SECRET_TITLE]]);
    const publication = (await alice.request(PublicationDocument, { id: a.publicationId, version: 1 })).node;
    expect(publication).toMatchObject({ latestVersion: { version: 1, content: SECRET_CONTENT } });
    expect((await alice.request(ConversationsDocument, {})).conversations.edges.map((e) => e.node.id)).toEqual([a.conversationId]);
    expect((await alice.request(ArtifactsDocument, {})).artifacts.edges.map((e) => e.node.id)).toEqual([a.artifactId]);

    // And Bob's own workspace is just as invisible to Alice.
    expect((await alice.request(WorkspaceDocument, { id: bobWorkspace.id })).workspace).toBeNull();
    expect((await alice.request(NodeDocument, { id: bobConversation.id })).node).toBeNull();
  });

  it("rejects requests without a key, with a wrong key, or with a malformed Authorization header", async () => {
    const noKey = await expectRejected(t.client.request(ViewerDocument, {}), MISSING_KEY);
    expect(noKey.status).toBe(401);
    await expectRejected(t.client.request(WorkspacesDocument, {}), MISSING_KEY);
    await expectRejected(t.client.request(CreateWorkspaceDocument, { input: { title: "x", goal: "y" } }), MISSING_KEY);

    const wrong = await expectRejected(t.as("dsk_wrong").request(ViewerDocument, {}), "Invalid API key.");
    expect(wrong.status).toBe(401);
    await expectRejected(t.as("dsk_wrong").request(WorkspaceDocument, { id: a.workspaceId }), "Invalid API key.");
    // A key that is nearly right is still wrong.
    await expectRejected(t.as(`${aliceKey}x`).request(ViewerDocument, {}), "Invalid API key.");

    // Over a real socket as well, with headers the way another client would send them.
    const over = (authorization: string) => createClient({ url: t.server!.url, headers: { authorization } });
    await expectRejected(over("Basic abc").request(ViewerDocument, {}), MALFORMED);
    await expectRejected(over(`Token ${aliceKey}`).request(ViewerDocument, {}), MALFORMED);
    await expectRejected(over("Bearer dsk_wrong").request(ViewerDocument, {}), "Invalid API key.");
    expect((await over(`Bearer ${aliceKey}`).request(ViewerDocument, {})).viewer.name).toBe("Alice");
  });

  it("gives Alice a second key with createApiKey that acts as her, and never shows a secret again", async () => {
    const created = expectType((await alice.request(CreateApiKeyDocument, { input: { name: "CI pipeline" } })).createApiKey, "CreateApiKeySuccess");
    expect(created.secret).toMatch(/^dsk_[A-Za-z0-9_-]+$/);
    expect(created.secret).not.toBe(aliceKey);
    expect(created.apiKey.name).toBe("CI pipeline");
    expect(created.secret.startsWith(created.apiKey.prefix)).toBe(true);

    const second = t.as(created.secret);
    const withFirst = (await alice.request(ViewerDocument, {})).viewer;
    const withSecond = (await second.request(ViewerDocument, {})).viewer;
    expect(withSecond.id).toBe(withFirst.id);
    expect(withSecond.name).toBe("Alice");
    expect((await second.request(WorkspaceDocument, { id: a.workspaceId })).workspace?.id).toBe(a.workspaceId);

    expect(
      withSecond.apiKeys.edges
        .map((edge) => edge.node)
        .map((k) => k.name)
        .sort(),
    ).toEqual(["CI pipeline", "first key"]);
    const shown = JSON.stringify(withSecond);
    expect(shown).not.toContain(created.secret);
    expect(shown).not.toContain(aliceKey);

    // Bob's keys are his own; Alice's new key changed nothing for him.
    expect((await bob.request(ViewerDocument, {})).viewer.apiKeys.edges.map((edge) => edge.node)).toHaveLength(1);
    expect((await bob.request(NodeDocument, { id: created.apiKey.id })).node).toBeNull();

    const invalid = (await alice.request(CreateApiKeyDocument, { input: { name: "  " } })).createApiKey;
    expect(invalid.__typename).toBe("ValidationError");
    expect((await alice.request(ViewerDocument, {})).viewer.apiKeys.edges.map((edge) => edge.node)).toHaveLength(2);
  });

  it("refuses Bob a subscription to Alice's workspace, while Alice's own subscription works", async () => {
    // Bob, with a valid key, cannot watch Alice's workspace: it reads as not found.
    const bobsEvents = t.connect(bobKey).subscribe(WorkspaceEventsDocument, { workspaceId: a.workspaceId });
    await expect(bobsEvents.next()).rejects.toSatisfy((error) => error instanceof DossierRequestError && error.message === "Workspace not found.");

    // Alice can watch her own workspace (so the refusal is about who asks, not about the workspace).
    const watched = expectType(
      (await alice.request(CreateWorkspaceDocument, { input: { title: "Watched", goal: "w1" } })).createWorkspace,
      "CreateWorkspaceSuccess",
    ).workspace;
    const events = t.connect(aliceKey).subscribe(WorkspaceEventsDocument, { workspaceId: watched.id });
    const before = t.listeners();
    const first = events.next();
    await waitFor(() => t.listeners() > before);
    expectType(
      (await alice.request(UpdateGoalDocument, { input: { workspaceId: watched.id, statement: "w2", expectedVersion: 1 } })).updateGoal,
      "UpdateGoalSuccess",
    );
    const received = await withTimeout(first, 10_000);
    expect(received.done).toBe(false);
    expect(received.value).toMatchObject({ workspaceEvents: { kind: "GOAL_UPDATED", goal: { version: 2 } } });
    await events.return?.();
    await waitFor(() => t.listeners() === before);
  });

  it("closes a socket that presents a wrong key, a malformed header or none, before any subscription starts", async () => {
    const listening = t.listeners();
    for (const authorization of ["Bearer dsk_wrong", "Basic abc", undefined]) {
      // A plain graphql-ws client that gives up at the first refusal.
      const socket = createWsClient({
        url: t.server!.wsUrl,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        connectionParams: { headers: authorization ? { authorization } : {} },
      });
      try {
        const iterator = socket.iterate({ query: print(WorkspaceEventsDocument), variables: { workspaceId: a.workspaceId } });
        const outcome = await withTimeout(
          iterator.next().then(
            (result) => ({ refused: false, result }),
            (error: unknown) => ({ refused: true, error }),
          ),
          10_000,
        );
        expect(outcome, `with ${authorization ?? "no Authorization header"}`).toMatchObject({ refused: true });
      } finally {
        await socket.dispose();
      }
    }
    expect(t.listeners()).toBe(listening);
  });
});

describe.each(backends)("keys when authentication is not required, on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: false });
  });
  afterAll(async () => t?.close());

  it("treats a keyless request as the development principal, but never downgrades a wrong key", async () => {
    const development = (await t.client.request(ViewerDocument, {})).viewer;
    expect(development.name).toBe("Development principal");
    expectType((await t.client.request(CreateWorkspaceDocument, { input: { title: "Dev", goal: "dev goal" } })).createWorkspace, "CreateWorkspaceSuccess");

    await expectRejected(t.as("dsk_wrong").request(ViewerDocument, {}), "Invalid API key.");
    await expectRejected(t.as("dsk_wrong").request(WorkspacesDocument, {}), "Invalid API key.");
    const inProcess = (async (input: string, init?: RequestInit) => t.app.yoga.fetch(new Request(input, init))) as typeof fetch;
    const basic = createClient({ url: "http://dossier.test/graphql", fetch: inProcess, headers: { authorization: "Basic abc" } });
    await expectRejected(basic.request(ViewerDocument, {}), MALFORMED);

    // A valid key acts as its own principal, who does not see the development principal's work.
    const carol = t.as(await t.createPrincipal("Carol"));
    const viewer = (await carol.request(ViewerDocument, {})).viewer;
    expect(viewer.name).toBe("Carol");
    expect(viewer.id).not.toBe(development.id);
    expect((await carol.request(WorkspacesDocument, {})).workspaces.edges).toEqual([]);
    expect((await t.client.request(WorkspacesDocument, {})).workspaces.edges.map((e) => e.node.title)).toEqual(["Dev"]);
  });
});

// The SDK's socket behaviour does not depend on the database: one backend is enough.
describe("a wrong key over the SDK's socket", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true, listen: true });
  });
  afterAll(async () => t?.close());

  // The server closes a refused socket with 4401 and the HTTP error's message; the SDK does not
  // retry it and reports the message.
  it("tells an SDK socket client with a wrong key promptly that its key is invalid", async () => {
    const client = createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl, headers: { authorization: "Bearer dsk_wrong" } });
    try {
      const iterator = client.subscribe(WorkspaceEventsDocument, { workspaceId: encodeGlobalId("Workspace", "any") });
      const error = await withTimeout(
        iterator.next().then(
          () => null,
          (e: unknown) => e,
        ),
        5_000,
      );
      expect(error).toBeInstanceOf(DossierRequestError);
      expect((error as DossierRequestError).message).toBe("Invalid API key.");
    } finally {
      void client.close().catch(() => undefined);
    }
  });
});
