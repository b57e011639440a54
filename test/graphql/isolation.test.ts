// A6: principals are isolated. One principal's objects are invisible to another, through
// every query, mutation and subscription; a wrong key is always rejected, never downgraded.
// Every attack runs three times: with Bob's API key, with an access token Bob minted for his own
// workspace and conversation with every operation (a token may also be refused outright, with
// ForbiddenError, where it may not use a field at all), and as Bob signed in to his team's app (a
// JWT from a JWKS the test serves on loopback: his own principal, with his own workspace and
// conversation). A token is further held to its grants within Bob's own things: his other
// workspace and its run, his keys, webhooks and MCP servers.
import { print } from "graphql";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createClient, type DossierClient, DossierRequestError, nodesOf } from "../../sdk/client.js";
import {
  AdmitRunDocument,
  ApiKeysDocument,
  ArchiveWorkspaceDocument,
  ArtifactDocument,
  ArtifactsDocument,
  CancelRunDocument,
  ConversationDocument,
  ConversationsDocument,
  CreateApiKeyDocument,
  CreateArtifactDocument,
  CreateScoreConfigDocument,
  CreateScoreDocument,
  DeleteScoreDocument,
  RunScoresDocument,
  CreateAccessTokenDocument,
  CreateWebhookDocument,
  CreateWorkspaceDocument,
  DeleteMcpServerDocument,
  DeleteWebhookDocument,
  DeleteWorkspaceDocument,
  GoalVersionsDocument,
  LinkToWorkspaceDocument,
  McpServersDocument,
  NodeDocument,
  PublicationDocument,
  PublicationsDocument,
  PublishVersionDocument,
  RestoreWorkspaceDocument,
  RetainArtifactDocument,
  RevokeApiKeyDocument,
  RunDocument,
  RunEventsDocument,
  RunOutputDocument,
  RunsDocument,
  StartConversationDocument,
  TraceUpdatesDocument,
  UnlinkFromWorkspaceDocument,
  UpdateGoalDocument,
  UpsertMcpServerDocument,
  UpsertSkillDocument,
  ViewerDocument,
  WebhooksDocument,
  WorkspaceDocument,
  WorkspaceEventsDocument,
  WorkspaceLinksDocument,
  WorkspacesDocument,
} from "../../sdk/generated/graphql.js";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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

/** Who attacks: Bob with his API key, with an access token he minted for his own workspace and conversation, or signed in to his app. */
const ATTACKERS = ["Bob's API key", "a token Bob minted for his own workspace", "Bob signed in to his team's app"] as const;
type Attacker = (typeof ATTACKERS)[number];
const isToken = (attacker: Attacker) => attacker === "a token Bob minted for his own workspace";
const SIGNED_IN: Attacker = "Bob signed in to his team's app";

/** The team's identity provider: one signing key, its JWKS served on loopback, and a JWT for `sub`. */
async function startIdentityProvider() {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "team-app", alg: "ES256", use: "sig" };
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = "https://auth.team-app.test/";
  const audience = "team-app";
  return {
    settings: { jwksUrl: `http://127.0.0.1:${port}/jwks.json`, issuer, audience, principalClaim: "sub", allowedHosts: [`127.0.0.1:${port}`] },
    signIn: (sub: string) =>
      new SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid: jwk.kid })
        .setSubject(sub)
        .setIssuer(issuer)
        .setAudience(audience)
        .setExpirationTime("1h")
        .sign(privateKey),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
const EVERY_OPERATION = ["READ", "SUBSCRIBE", "ADMIT", "DECIDE", "CANCEL", "SCORE"] as const;

/** The code a request was refused with (the first error's), or "answered". */
const refusalOf = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => "answered",
    (error: unknown) => (error instanceof DossierRequestError ? String(error.errors[0]?.extensions?.code ?? error.message) : String(error)),
  );

/** A connection's ids, sorted, or the code it was refused with. */
const idsOf = (connection: Promise<{ edges: readonly { node: { id: string } }[] }>): Promise<string[] | string> =>
  connection.then(
    (c) => c.edges.map((e) => e.node.id).sort(),
    (error: unknown) => (error instanceof DossierRequestError ? String(error.errors[0]?.extensions?.code) : String(error)),
  );

/**
 * A change refused as this attacker gets it, and its message: NotFoundError with a key; with a
 * token, NotFoundError where its grants cover what the field changes, ForbiddenError (typed, or
 * the request's FORBIDDEN error where the payload has none) where a token may not use it at all.
 */
async function refused(attacker: Attacker, pending: Promise<{ __typename: string }>): Promise<string> {
  const outcome = await pending.then(
    (payload) => payload as { __typename: string; message?: string },
    (error: unknown) => error,
  );
  if (outcome instanceof DossierRequestError && isToken(attacker) && outcome.errors[0]?.extensions?.code === "FORBIDDEN") return outcome.message;
  const payload = outcome as { __typename: string; message: string };
  const allowed = isToken(attacker) ? ["NotFoundError", "ForbiddenError"] : ["NotFoundError"];
  if (!allowed.includes(payload?.__typename)) throw new Error(`expected ${allowed.join(" or ")} for ${attacker}, got ${JSON.stringify(outcome)}`);
  return payload.message;
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
    spanId: string;
    scoreIds: string[];
  };
  // Bob's own objects: the token he minted is granted his workspace and his conversation.
  let b: {
    apiKeyId: string;
    workspaceId: string;
    otherWorkspaceId: string;
    conversationId: string;
    conversationIds: string[];
    otherRunId: string;
    webhookId: string;
  };
  let bobToken: string;
  // Bob signed in to his team's app: his own principal, with his own workspace and conversation.
  let identityProvider: Awaited<ReturnType<typeof startIdentityProvider>>;
  let signedIn: { jwt: string; workspaceId: string; conversationId: string };
  const credentialOf = (attacker: Attacker) => (attacker === SIGNED_IN ? signedIn.jwt : isToken(attacker) ? bobToken : bobKey);
  const attackerClient = (attacker: Attacker) => (attacker === "Bob's API key" ? bob : t.as(credentialOf(attacker)));
  /** The attacker's own side: what he may use as his, and the whole principal's view of it (to see nothing changed). */
  const ownOf = (attacker: Attacker) =>
    attacker === SIGNED_IN
      ? {
          client: t.as(signedIn.jwt),
          workspaceId: signedIn.workspaceId,
          conversationId: signedIn.conversationId,
          conversationIds: [signedIn.conversationId],
          runIds: [],
        }
      : { client: bob, workspaceId: b.workspaceId, conversationId: b.conversationId, conversationIds: b.conversationIds, runIds: [b.otherRunId] };

  beforeAll(async () => {
    // A worker answers Alice's run, so her conversation holds messages to attack. The answer is
    // blank, so nothing is published: her objects stay exactly the ones made below.
    identityProvider = await startIdentityProvider();
    t = await startTestApp(backend, {
      authRequired: true,
      listen: true,
      signIn: identityProvider.settings,
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
    // Alice scores her run, a span of it and her publication version; Bob has a config of the same name.
    const spanId = (await alice.runTrace(run.id))!.trace!.spans[0]!.id;
    for (const client of [alice, bob]) {
      const created = await client.request(CreateScoreConfigDocument, { input: { name: "quality", kind: "BOOLEAN" } });
      expectType(created.createScoreConfig, "CreateScoreConfigSuccess");
    }
    const scoreIds: string[] = [];
    for (const targetId of [run.id, spanId, published.id]) {
      const created = await alice.request(CreateScoreDocument, {
        input: { targetId, configName: "quality", value: 1, source: "HUMAN", comment: SECRET_CONTENT },
      });
      scoreIds.push(expectType(created.createScore, "CreateScoreSuccess").score.id);
    }

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
      spanId,
      scoreIds,
    };
    expect(a.linkIds).toHaveLength(4);

    const bobWorkspace = async (title: string) =>
      expectType((await bob.request(CreateWorkspaceDocument, { input: { title, goal: `${title} goal` } })).createWorkspace, "CreateWorkspaceSuccess").workspace
        .id;
    const workspaceId = await bobWorkspace("Bob's");
    const otherWorkspaceId = await bobWorkspace("Bob's other");
    const conversationId = expectType(
      (await bob.request(StartConversationDocument, { input: { title: "Bob's conversation" } })).startConversation,
      "StartConversationSuccess",
    ).conversation.id;
    const otherRun = expectType(
      (await bob.request(AdmitRunDocument, { input: { workspaceId: otherWorkspaceId, question: "Bob's other question" } })).admitRun,
      "AdmitRunSuccess",
    ).run;
    expect((await settled(bob, otherRun.id)).status).toBe("SUCCEEDED");
    const webhook = expectType(
      (await bob.request(CreateWebhookDocument, { input: { url: "https://hooks.example/bob", events: ["RUN_SUCCEEDED"] } })).createWebhook,
      "CreateWebhookSuccess",
    ).webhook;
    expectType(
      (await bob.request(UpsertMcpServerDocument, { input: { name: "bobs-tools", transport: "HTTP", url: "https://mcp.example/bob" } })).upsertMcpServer,
      "UpsertMcpServerSuccess",
    );
    bobToken = expectType(
      (
        await bob.request(CreateAccessTokenDocument, {
          input: {
            grants: [
              { resourceId: workspaceId, operations: [...EVERY_OPERATION] },
              { resourceId: conversationId, operations: [...EVERY_OPERATION] },
            ],
          },
        })
      ).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
    b = {
      apiKeyId: (await bob.request(ViewerDocument, {})).viewer.apiKeys.edges[0]!.node.id,
      workspaceId,
      otherWorkspaceId,
      conversationId,
      conversationIds: (await bob.request(ConversationsDocument, {})).conversations.edges.map((e) => e.node.id).sort(),
      otherRunId: otherRun.id,
      webhookId: webhook.id,
    };
    expect(b.conversationIds).toHaveLength(2);

    const jwt = await identityProvider.signIn("Bob");
    const asSignedIn = t.as(jwt);
    signedIn = {
      jwt,
      workspaceId: expectType(
        (await asSignedIn.request(CreateWorkspaceDocument, { input: { title: "Bob's app workspace", goal: "Bob's app goal" } })).createWorkspace,
        "CreateWorkspaceSuccess",
      ).workspace.id,
      conversationId: expectType(
        (await asSignedIn.request(StartConversationDocument, { input: { title: "Bob's app conversation" } })).startConversation,
        "StartConversationSuccess",
      ).conversation.id,
    };
  });
  afterAll(async () => {
    await t?.close();
    await identityProvider?.close();
  });

  it.each(ATTACKERS)("shows Bob, with %s, none of Alice's objects: node(id) and workspace(id) are null, every list holds only his own", async (attacker) => {
    const attacking = attackerClient(attacker);
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
      a.spanId,
      ...a.scoreIds,
    ];
    for (const id of ids) {
      // Alice can read each of them; Bob cannot tell them from ids that name nothing.
      expect((await alice.request(NodeDocument, { id })).node?.id).toBe(id);
      expect((await attacking.request(NodeDocument, { id })).node).toBeNull();
    }
    expect((await attacking.request(RunDocument, { id: a.runId })).node).toBeNull();
    expect((await attacking.request(ArtifactDocument, { id: a.artifactId })).node).toBeNull();
    expect((await attacking.request(ConversationDocument, { id: a.conversationId })).node).toBeNull();
    expect((await attacking.request(PublicationDocument, { id: a.publicationId, version: 1 })).node).toBeNull();

    expect((await attacking.request(WorkspaceDocument, { id: a.workspaceId })).workspace).toBeNull();
    expect((await attacking.request(GoalVersionsDocument, { workspaceId: a.workspaceId })).workspace).toBeNull();
    expect((await attacking.request(WorkspaceLinksDocument, { workspaceId: a.workspaceId })).workspace).toBeNull();

    // Lists hold Bob's own objects only: with a token, only the granted ones, or refuse where a token may not list.
    const lists = {
      workspaces: await idsOf(attacking.request(WorkspacesDocument, {}).then((d) => d.workspaces)),
      runs: await idsOf(attacking.request(RunsDocument, {}).then((d) => d.runs)),
      publications: await idsOf(attacking.request(PublicationsDocument, {}).then((d) => d.publications)),
      conversations: await idsOf(attacking.request(ConversationsDocument, {}).then((d) => d.conversations)),
      artifacts: await idsOf(attacking.request(ArtifactsDocument, {}).then((d) => d.artifacts)),
    };
    const own = ownOf(attacker);
    expect(lists).toEqual(
      isToken(attacker)
        ? { workspaces: [b.workspaceId], runs: [], publications: "FORBIDDEN", conversations: [b.conversationId], artifacts: "FORBIDDEN" }
        : attacker === SIGNED_IN
          ? { workspaces: [own.workspaceId], runs: [], publications: [], conversations: own.conversationIds, artifacts: [] }
          : { workspaces: [b.workspaceId, b.otherWorkspaceId].sort(), runs: [b.otherRunId], publications: [], conversations: b.conversationIds, artifacts: [] },
    );

    if (isToken(attacker)) expect(await refusalOf(attacking.request(ViewerDocument, {}))).toBe("FORBIDDEN");
    else {
      const bobViewer = (await attacking.request(ViewerDocument, {})).viewer;
      expect(bobViewer.name).toBe("Bob");
      expect(bobViewer.id).not.toBe(a.principalId);
    }
  });

  it.each(ATTACKERS)("refuses every change Bob attempts, with %s, on Alice's objects, and changes nothing", async (attacker) => {
    const attacking = attackerClient(attacker);
    const workspaceId = a.workspaceId;
    const own = ownOf(attacker);
    const refusal = (pending: Promise<{ __typename: string }>) => refused(attacker, pending);

    // Bob gets exactly what he would get for a workspace that never existed.
    const missingWorkspace = encodeGlobalId("Workspace", "00000000-0000-0000-0000-000000000000");
    const forMissing = await refusal(
      attacking.request(UpdateGoalDocument, { input: { workspaceId: missingWorkspace, statement: "x", expectedVersion: 1 } }).then((d) => d.updateGoal),
    );
    expect(
      await refusal(attacking.request(UpdateGoalDocument, { input: { workspaceId, statement: "Bob's goal", expectedVersion: 1 } }).then((d) => d.updateGoal)),
    ).toBe(forMissing);
    await refusal(attacking.request(ArchiveWorkspaceDocument, { input: { workspaceId } }).then((d) => d.archiveWorkspace));
    await refusal(attacking.request(RestoreWorkspaceDocument, { input: { workspaceId } }).then((d) => d.restoreWorkspace));
    await refusal(attacking.request(DeleteWorkspaceDocument, { input: { workspaceId } }).then((d) => d.deleteWorkspace));

    // Links: Bob's object into Alice's workspace, and Alice's objects into Bob's workspace.
    await refusal(attacking.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId: own.conversationId } }).then((d) => d.linkToWorkspace));
    for (const targetId of [a.conversationId, a.runId, a.publicationId, a.artifactId]) {
      await refusal(attacking.request(LinkToWorkspaceDocument, { input: { workspaceId: own.workspaceId, targetId } }).then((d) => d.linkToWorkspace));
    }
    await refusal(attacking.request(UnlinkFromWorkspaceDocument, { input: { workspaceId, targetId: a.runId } }).then((d) => d.unlinkFromWorkspace));
    await refusal(
      attacking.request(RetainArtifactDocument, { input: { workspaceId: own.workspaceId, artifactId: a.artifactId } }).then((d) => d.retainArtifact),
    );

    // Admission: in Alice's workspace, in Alice's conversation, with Alice's publication as material
    // (also into Bob's own workspace and conversation, which a token is granted).
    await refusal(attacking.request(AdmitRunDocument, { input: { workspaceId, question: "Bob's question" } }).then((d) => d.admitRun));
    await refusal(attacking.request(AdmitRunDocument, { input: { conversationId: a.conversationId, question: "Bob's question" } }).then((d) => d.admitRun));
    const materials = [{ publicationId: a.publicationId, version: 1 }];
    for (const input of [{}, { workspaceId: own.workspaceId }, { workspaceId: own.workspaceId, conversationId: own.conversationId }]) {
      const material = await refusal(
        attacking.request(AdmitRunDocument, { input: { ...input, question: "Bob's question", materials } }).then((d) => d.admitRun),
      );
      expect(material).not.toContain(SECRET_TITLE);
      expect(material).not.toContain(SECRET_CONTENT);
      expect(material).not.toContain("Alice");
    }
    // A run of Alice's cannot be cancelled.
    await refusal(attacking.request(CancelRunDocument, { input: { runId: a.runId } }).then((d) => d.cancelRun));

    // Publishing: a new version of Alice's publication, or one built on hers, or one from her run.
    await refusal(attacking.request(PublishVersionDocument, { input: { publicationId: a.publicationId, content: "Bob's" } }).then((d) => d.publishVersion));
    await refusal(
      attacking
        .request(PublishVersionDocument, { input: { title: "Bob's", content: "Bob's", sources: [{ publicationId: a.publicationId, version: 1 }] } })
        .then((d) => d.publishVersion),
    );
    await refusal(
      attacking.request(PublishVersionDocument, { input: { title: "Bob's", content: "Bob's", originRunId: a.runId } }).then((d) => d.publishVersion),
    );

    // Scores: Bob can neither score Alice's run, span or version, nor delete her scores.
    for (const targetId of [a.runId, a.spanId, a.publicationVersionId]) {
      const score = await refusal(
        attacking.request(CreateScoreDocument, { input: { targetId, configName: "quality", value: 0, source: "HUMAN" } }).then((d) => d.createScore),
      );
      expect(score).not.toContain("Alice");
    }
    for (const id of a.scoreIds) await refusal(attacking.request(DeleteScoreDocument, { input: { id } }).then((d) => d.deleteScore));
    const aliceScores = (await alice.request(RunScoresDocument, { id: a.runId })).run!;
    expect(aliceScores.scores.edges.map((e) => [e.node.id, e.node.value])).toEqual([[a.scoreIds[0], 1]]);
    expect(aliceScores.scoreSummary).toEqual([{ configName: "quality", count: 1, mean: 1, labelCounts: [{ label: "true", count: 1 }] }]);

    // Nothing Bob tried left anything behind on his side either.
    expect((await own.client.request(RunsDocument, {})).runs.edges.map((e) => e.node.id)).toEqual(own.runIds);
    expect((await own.client.request(PublicationsDocument, {})).publications.edges).toEqual([]);
    expect((await own.client.request(ConversationsDocument, {})).conversations.edges.map((e) => e.node.id).sort()).toEqual(own.conversationIds);
    expect((await own.client.request(WorkspaceLinksDocument, { workspaceId: own.workspaceId })).workspace?.links.edges).toEqual([]);

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
    expect((await alice.request(WorkspaceDocument, { id: b.workspaceId })).workspace).toBeNull();
    expect((await alice.request(NodeDocument, { id: b.conversationId })).node).toBeNull();
  });

  it("holds a token to its grants among Bob's own things: his other workspace and run, keys, webhooks, MCP servers and skills", async () => {
    const holder = t.as(bobToken);
    const forbidden = (pending: Promise<{ __typename: string }>) => refused("a token Bob minted for his own workspace", pending);
    // What it was granted, it reads: the refusals below are about the grants.
    expect((await holder.request(WorkspaceDocument, { id: b.workspaceId })).workspace?.title).toBe("Bob's");

    // Bob's other workspace and its run (with its trace and usage) read as absent; nothing can be done there.
    for (const id of [b.otherWorkspaceId, b.otherRunId]) expect((await holder.request(NodeDocument, { id })).node).toBeNull();
    expect((await holder.request(WorkspaceDocument, { id: b.otherWorkspaceId })).workspace).toBeNull();
    expect((await holder.request(RunDocument, { id: b.otherRunId })).node).toBeNull();
    const admitted = await forbidden(
      holder.request(AdmitRunDocument, { input: { workspaceId: b.otherWorkspaceId, question: "Into the other one" } }).then((d) => d.admitRun),
    );
    expect(admitted).toBe("Resource not found.");
    await forbidden(holder.request(CancelRunDocument, { input: { runId: b.otherRunId } }).then((d) => d.cancelRun));
    // It scores only what it was granted, and makes no score configs (they are the whole principal's).
    const scoring = await forbidden(
      holder.request(CreateScoreDocument, { input: { targetId: b.otherRunId, configName: "quality", value: 1, source: "HUMAN" } }).then((d) => d.createScore),
    );
    expect(scoring).toBe("Resource not found.");
    await forbidden(holder.request(CreateScoreConfigDocument, { input: { name: "from a page", kind: "BOOLEAN" } }).then((d) => d.createScoreConfig));
    expect((await bob.request(RunScoresDocument, { id: b.otherRunId })).run!.scores.totalCount).toBe(0);
    await forbidden(
      holder.request(UpdateGoalDocument, { input: { workspaceId: b.otherWorkspaceId, statement: "x", expectedVersion: 1 } }).then((d) => d.updateGoal),
    );
    const socket = t.connect(bobToken);
    expect([
      await refusalOf(socket.subscribe(WorkspaceEventsDocument, { workspaceId: b.otherWorkspaceId }).next()),
      await refusalOf(socket.subscribe(RunEventsDocument, { runId: b.otherRunId }).next()),
      await refusalOf(socket.subscribe(RunOutputDocument, { runId: b.otherRunId }).next()),
      await refusalOf(socket.subscribe(TraceUpdatesDocument, { runId: b.otherRunId }).next()),
    ]).toEqual(["NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND"]);

    // Keys: neither listed nor shown, made, revoked nor used to mint.
    expect(await refusalOf(holder.request(ViewerDocument, {}))).toBe("FORBIDDEN");
    expect(await refusalOf(holder.request(ApiKeysDocument, {}))).toBe("FORBIDDEN");
    expect((await holder.request(NodeDocument, { id: b.apiKeyId })).node).toBeNull();
    await forbidden(holder.request(CreateApiKeyDocument, { input: { name: "from a page" } }).then((d) => d.createApiKey));
    await forbidden(holder.request(RevokeApiKeyDocument, { input: { id: b.apiKeyId } }).then((d) => d.revokeApiKey));
    await forbidden(
      holder
        .request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: b.otherWorkspaceId, operations: ["READ"] }] } })
        .then((d) => d.createAccessToken),
    );

    // Webhooks, MCP servers and skills: neither listed nor changed.
    expect(await refusalOf(holder.request(WebhooksDocument, {}))).toBe("FORBIDDEN");
    expect((await holder.request(NodeDocument, { id: b.webhookId })).node).toBeNull();
    await forbidden(
      holder.request(CreateWebhookDocument, { input: { url: "https://hooks.example/page", events: ["RUN_SUCCEEDED"] } }).then((d) => d.createWebhook),
    );
    await forbidden(holder.request(DeleteWebhookDocument, { input: { id: b.webhookId } }).then((d) => d.deleteWebhook));
    expect(await refusalOf(holder.request(McpServersDocument, {}))).toBe("FORBIDDEN");
    await forbidden(
      holder
        .request(UpsertMcpServerDocument, { input: { name: "bobs-tools", transport: "HTTP", url: "https://mcp.example/page" } })
        .then((d) => d.upsertMcpServer),
    );
    await forbidden(holder.request(DeleteMcpServerDocument, { input: { name: "bobs-tools" } }).then((d) => d.deleteMcpServer));
    await forbidden(holder.request(UpsertSkillDocument, { input: { name: "page-skill", description: "d", body: "b" } }).then((d) => d.upsertSkill));

    // Bob's things are as he left them (stored URLs read redacted, as always).
    const viewer = (await bob.request(ViewerDocument, {})).viewer;
    expect(nodesOf(viewer.apiKeys).map((k) => [k.id, k.revokedAt ?? null])).toEqual([[b.apiKeyId, null]]);
    expect((await bob.request(WebhooksDocument, {})).webhooks.edges.map(({ node: w }) => [w.id, w.url])).toEqual([
      [b.webhookId, "https://hooks.example/…/***"],
    ]);
    expect((await bob.request(McpServersDocument, {})).mcpServers.edges.map(({ node: m }) => [m.name, m.url])).toEqual([
      ["bobs-tools", "https://mcp.example/…/***"],
    ]);
    expect((await bob.request(WorkspaceDocument, { id: b.otherWorkspaceId })).workspace?.goal.version).toBe(1);
    expect((await bob.request(RunsDocument, {})).runs.edges.map((e) => e.node.id)).toEqual([b.otherRunId]);
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

  it.each(ATTACKERS)("refuses Bob, with %s, a subscription to Alice's workspace or run: it reads as not found", async (attacker) => {
    const socket = t.connect(credentialOf(attacker));
    const listening = t.listeners();
    const refusals = [
      await refusalOf(socket.subscribe(WorkspaceEventsDocument, { workspaceId: a.workspaceId }).next()),
      await refusalOf(socket.subscribe(RunEventsDocument, { runId: a.runId }).next()),
      await refusalOf(socket.subscribe(RunOutputDocument, { runId: a.runId }).next()),
      await refusalOf(socket.subscribe(TraceUpdatesDocument, { runId: a.runId }).next()),
    ];
    expect(refusals).toEqual(["NOT_FOUND", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND"]);
    expect(t.listeners()).toBe(listening);
  });

  it("lets Alice watch her own workspace (the refusals are about who asks, not about the workspace)", async () => {
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
