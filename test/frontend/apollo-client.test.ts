// Apollo Client 4 against a running Dossier server, set up as a frontend team sets it up: a
// normalized InMemoryCache (relayStylePagination on every connection of the schema), HttpLink behind
// PersistedQueryLink, and GraphQLWsLink for subscriptions. What a team would see go wrong: one
// workspace's question or catalog version read back with another's data, two searches overwriting
// each other's snippets, persisted queries that never hit, a run stream that starts empty.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ApolloClient, ApolloLink, gql, HttpLink, InMemoryCache, type TypedDocumentNode } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition, relayStylePagination } from "@apollo/client/utilities";
import { buildSchema, getNamedType, isAbstractType, isObjectType } from "graphql";
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  AdmitRunDocument,
  CreateApiKeyDocument,
  CreateScheduleDocument,
  LinkToWorkspaceDocument,
  RunEventsDocument,
  UpdateCheckpointDocument,
  UpdateGoalDocument,
} from "../../sdk/generated/graphql.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** A tool that holds its run RUNNING until the test lets it go. */
function gate() {
  let entered!: () => void;
  let release!: () => void;
  const started = new Promise<void>((resolve) => (entered = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const tool: Tool = {
    schema: { name: "hold", description: "waits until released", parameters: { type: "object" } },
    execute: async () => {
      entered();
      await released;
      return "held";
    },
  };
  return { tool, started, release };
}

const publishedSchema = () => buildSchema(readFileSync(new URL("../../schema/schema.graphql", import.meta.url), "utf8"));

/** Every connection field of the published SDL, as Type.field, with its arguments other than Relay's. */
function connectionFields(): { type: string; field: string; keyArgs: string[] }[] {
  return Object.values(publishedSchema().getTypeMap())
    .filter(isObjectType)
    .filter((type) => !type.name.startsWith("__"))
    .flatMap((type) =>
      Object.values(type.getFields())
        .filter((field) => getNamedType(field.type).name.endsWith("Connection"))
        .map((field) => ({
          type: type.name,
          field: field.name,
          keyArgs: field.args.map((arg) => arg.name).filter((name) => !["first", "after", "last", "before"].includes(name)),
        })),
    );
}

/** relayStylePagination on every connection field, keyed by its other arguments (as a team would configure it). */
function everyConnectionPaginated() {
  const policies: Record<string, { fields: Record<string, ReturnType<typeof relayStylePagination>> }> = {};
  for (const { type, field, keyArgs } of connectionFields()) {
    policies[type] ??= { fields: {} };
    policies[type].fields[field] = relayStylePagination(keyArgs.length ? keyArgs : false);
  }
  return policies;
}

/** The supertypes' members, from the published SDL, as a team feeds them to InMemoryCache's possibleTypes. */
function possibleTypes(): Record<string, string[]> {
  const schema = publishedSchema();
  return Object.fromEntries(
    Object.values(schema.getTypeMap())
      .filter(isAbstractType)
      .map((type) => [type.name, schema.getPossibleTypes(type).map((member) => member.name)]),
  );
}

type Sent = { query?: string; extensions?: { persistedQuery?: { sha256Hash: string } } };

/** The client a team would build; `sent` records every HTTP body that went over the wire. */
function apolloClient(server: NonNullable<TestApp["server"]>) {
  const sent: Sent[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    sent.push(JSON.parse(String(init?.body)) as Sent);
    return fetch(input, init);
  };
  const ws = createWsClient({ url: server.wsUrl, webSocketImpl: WebSocket, lazy: true, retryAttempts: 0 });
  const http = new PersistedQueryLink({ sha256 }).concat(new HttpLink({ uri: server.url, fetch: recordingFetch }));
  const link = ApolloLink.split(
    ({ query }) => {
      const definition = getMainDefinition(query);
      return definition.kind === "OperationDefinition" && definition.operation === "subscription";
    },
    new GraphQLWsLink(ws),
    http,
  );
  const cache = new InMemoryCache({
    possibleTypes: possibleTypes(),
    typePolicies: everyConnectionPaginated(),
  });
  const client = new ApolloClient({ link, cache });
  return { client, cache, sent, close: () => ws.dispose() };
}

type WorkspaceRead = {
  node: {
    id: string;
    checkpoint: { id: string; questions: { id: string; questionId: string; text: string }[] } | null;
    checkpointVersions: { id: string; questions: { id: string; questionId: string; text: string }[] }[];
    historyCatalog: {
      edges: { cursor: string; node: { publicationId: string; title: string; versions: { id: string; versionId: string; version: number }[] } }[];
      pageInfo: { hasNextPage: boolean; endCursor: string | null };
    };
  } | null;
};

const WORKSPACE: TypedDocumentNode<WorkspaceRead, { id: string; after?: string | null }> = gql`
  query WorkspaceHistory($id: ID!, $after: String) {
    node(id: $id) {
      id
      ... on Workspace {
        checkpoint { ... on Checkpoint { id questions { id questionId text } } }
        checkpointVersions { ... on Checkpoint { id questions { id questionId text } } }
        historyCatalog(first: 1, after: $after) {
          edges { cursor node { publicationId title versions { id versionId version } } }
          pageInfo { hasNextPage endCursor }
        }
      }
    }
  }
`;

type Hits = { searchHistory: { __typename: string; hits?: { id: string; versionId: string; snippet: string }[] } };

const SEARCH: TypedDocumentNode<Hits, { workspaceId: string; query: string }> = gql`
  query Search($workspaceId: ID!, $query: String!) {
    searchHistory(workspaceId: $workspaceId, query: $query) {
      ... on SearchHistorySuccess { hits { id versionId snippet } }
    }
  }
`;

describe("Apollo Client 4 against a running server", () => {
  let t: TestApp;
  let apollo: ReturnType<typeof apolloClient>;
  const hold = gate();
  beforeAll(async () => {
    const model = new ScriptedModel({ name: "apollo", steps: [{ toolCalls: [{ name: "hold", arguments: {} }] }, { content: "Held, then answered." }] });
    t = await startTestApp("pglite", {
      listen: true,
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), extraTools: [hold.tool] },
    });
    apollo = apolloClient(t.server!);
  });
  afterAll(async () => {
    hold.release();
    await apollo?.close();
    await t?.close();
  });

  it("keeps two workspaces' questions and catalogs and two searches' snippets apart in its normalized cache", async () => {
    const workspaces: Record<string, string> = {};
    for (const name of ["north", "south"]) {
      const workspace = await createWorkspace(t.client, `${name} goal`);
      workspaces[name] = workspace.id;
      for (const topic of ["membranes", "anodes"]) {
        const { version } = await publish(t.client, { title: `${name} ${topic}`, content: `${topic} are the bottleneck of every ${name} cell plant` });
        await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: version.publication.id } });
      }
      for (const revision of [0, 1]) {
        const updated = await t.client.request(UpdateCheckpointDocument, {
          input: { workspaceId: workspace.id, expectedRevision: revision, questions: [{ text: `${name} question ${revision + 1}` }] },
        });
        expectType(updated.updateCheckpoint, "UpdateCheckpointSuccess");
      }
    }

    // Each workspace read as a page of one catalog entry, then the next page through fetchMore.
    for (const id of Object.values(workspaces)) {
      const first = await apollo.client.query({ query: WORKSPACE, variables: { id } });
      const page = first.data!.node!.historyCatalog;
      expect(page.edges).toHaveLength(1);
      expect(page.pageInfo.hasNextPage).toBe(true);
      const watched = apollo.client.watchQuery({ query: WORKSPACE, variables: { id } });
      await watched.fetchMore({ variables: { after: page.pageInfo.endCursor } });
    }
    // One version of each workspace found by two searches with different terms.
    await apollo.client.query({ query: SEARCH, variables: { workspaceId: workspaces.north!, query: "membranes" } });
    await apollo.client.query({ query: SEARCH, variables: { workspaceId: workspaces.north!, query: "bottleneck" } });

    for (const [name, id] of Object.entries(workspaces)) {
      const read = apollo.cache.readQuery({ query: WORKSPACE, variables: { id } })!.node!;
      expect(read.checkpoint!.questions.map((q) => [q.questionId, q.text])).toEqual([
        ["q1", `${name} question 1`],
        ["q2", `${name} question 2`],
      ]);
      expect(read.checkpointVersions.map((c) => c.questions.map((q) => q.text))).toEqual([
        [`${name} question 1`, `${name} question 2`],
        [`${name} question 1`],
      ]);
      // relayStylePagination merged both pages, each entry this workspace's own.
      expect(read.historyCatalog.edges.map((e) => e.node.title).sort()).toEqual([`${name} anodes`, `${name} membranes`]);
      expect(read.historyCatalog.pageInfo.hasNextPage).toBe(false);
    }
    const hits = (query: string) => apollo.cache.readQuery({ query: SEARCH, variables: { workspaceId: workspaces.north!, query } })!.searchHistory.hits!;
    const membranes = hits("membranes");
    const bottleneck = hits("bottleneck");
    expect(membranes).toHaveLength(1);
    expect(bottleneck).toHaveLength(2);
    expect(membranes[0]!.snippet).toContain("«membranes»");
    expect(membranes[0]!.snippet).not.toContain("«bottleneck»");
    // The version both searches found keeps each search's own snippet.
    const both = bottleneck.find((hit) => hit.versionId === membranes[0]!.versionId)!;
    expect(both.snippet).toContain("«bottleneck»");
    expect(both.snippet).not.toContain("«membranes»");

    // Relay keys records by id alone: no id in Apollo's store names two records.
    const idsByKey = Object.entries(apollo.cache.extract())
      .filter(([key]) => key !== "ROOT_QUERY" && key !== "ROOT_MUTATION")
      .map(([key, record]) => [key, (record as { id?: string }).id] as const);
    const typenamesOf = new Map<string, string[]>();
    for (const [key, id] of idsByKey) if (id) typenamesOf.set(id, [...(typenamesOf.get(id) ?? []), key]);
    expect([...typenamesOf.values()].filter((keys) => keys.length > 1)).toEqual([]);
    const kinds = new Set(idsByKey.map(([key]) => key.split(":")[0]));
    for (const kind of ["Workspace", "Checkpoint", "CheckpointQuestion", "CatalogVersion", "HistorySearchHit"]) expect(kinds.has(kind), kind).toBe(true);
  });

  it("sends a persisted query's full text only after PersistedQueryNotFound, then its hash alone", async () => {
    const query = gql`
      query ApqViewer { viewer { id name } }
    `;
    apollo.sent.length = 0;
    const first = await apollo.client.query({ query, fetchPolicy: "network-only" });
    expect(apollo.sent.map((body) => [body.query !== undefined, body.extensions?.persistedQuery?.sha256Hash])).toEqual([
      [false, expect.stringMatching(/^[0-9a-f]{64}$/)],
      [true, apollo.sent[0]!.extensions!.persistedQuery!.sha256Hash],
    ]);
    // The hash is of the text Apollo sent (with its __typename), so the server keeps that text.
    expect(sha256(apollo.sent[1]!.query!)).toBe(apollo.sent[0]!.extensions!.persistedQuery!.sha256Hash);
    apollo.sent.length = 0;
    const second = await apollo.client.query({ query, fetchPolicy: "network-only" });
    expect(apollo.sent).toHaveLength(1);
    expect(apollo.sent[0]!.query).toBeUndefined();
    expect(apollo.sent[0]!.extensions?.persistedQuery?.sha256Hash).toMatch(/^[0-9a-f]{64}$/);
    expect(second.data).toEqual(first.data);
    expect(first.data).toMatchObject({ viewer: { __typename: "Principal", name: expect.any(String) } });
  });

  it("streams runEvents of a run admitted through Apollo from its current status to the terminal one", async () => {
    const admitted = await apollo.client.mutate({ mutation: AdmitRunDocument, variables: { input: { question: "Hold, then answer" } } });
    const runId = expectType(admitted.data!.admitRun, "AdmitRunSuccess").run.id;
    await hold.started;
    const events: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      apollo.client.subscribe({ query: RunEventsDocument, variables: { runId } }).subscribe({
        next: (result) => {
          if (result.error) return reject(result.error);
          const event = result.data!.runEvents;
          expect(event.run.id).toBe(runId);
          events.push(event.status);
          if (events.length === 1) hold.release();
        },
        error: reject,
        complete: resolve,
      });
    });
    await done;
    // Subscribed while the tool held the run: the first event is the status it already had.
    expect(events).toEqual(["RUNNING", "SUCCEEDED"]);
    // The run's record in the normalized cache followed the stream.
    expect(apollo.cache.extract()[`Run:${runId}`]).toMatchObject({ status: "SUCCEEDED", answer: "Held, then answered." });
  }, 20_000);
});

/** One connection to page through: where it is read from, and the variables that name its parent. */
type PagedCase = {
  type: string;
  field: string;
  parent?: () => string;
  /** Where the `list` selection sits when it is not on the root or on `node(id: $id)` as the case's type. */
  select?: (list: string) => string;
};

/** Connections of the schema not paged by the cases below, each with the reason. */
const PAGED_ELSEWHERE: Record<string, string> = {
  "Workspace.historyCatalog":
    "paged with fetchMore above (two workspaces' catalogs in one cache); it has no backwards paging and no totalCount, and tells its end with `complete`",
  "UnavailableCheckpoint.scores":
    "the same ScoreConnection, read the same way, as Checkpoint.scores (paged below) on a revision whose sources lost eligibility, which this setup does not make",
};

describe("Apollo Client 4 pages through the connections with relayStylePagination", () => {
  let t: TestApp;
  let apollo: ReturnType<typeof apolloClient>;
  const ids: Record<string, string> = {};
  const dbIdOf = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").split(":").slice(1).join(":");

  beforeAll(async () => {
    t = await startTestApp("pglite", { listen: true, runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-apollo-")) } });
    apollo = apolloClient(t.server!);
    const workspace = await createWorkspace(t.client, "Paged goal");
    ids.Workspace = workspace.id;
    for (const question of ["Hourly A", "Hourly B", "Hourly C"]) {
      const created = await t.client.request(CreateScheduleDocument, { input: { workspaceId: workspace.id, question, intervalSeconds: 3600 } });
      ids.Schedule ??= expectType(created.createSchedule, "CreateScheduleSuccess").schedule.id;
    }
    // Fires recorded as a scheduler records a skipped one (no run to disturb the other lists).
    for (let fire = 0; fire < 3; fire++) {
      await t.app.db.prisma.scheduleFire.create({
        data: { scheduleId: dbIdOf(ids.Schedule!), fireTime: new Date(Date.UTC(2026, 0, 1, fire)), status: "SKIPPED", reason: "paged" },
      });
    }
    for (const version of [1, 2]) {
      await t.client.request(UpdateGoalDocument, { input: { workspaceId: workspace.id, expectedVersion: version, statement: `Goal ${version + 1}` } });
    }
    const first = await admit(t.client, { question: "First", workspaceId: workspace.id });
    const run = await settled(t.client, first.run.id);
    ids.Run = first.run.id;
    ids.Conversation = first.run.conversation.id;
    ids.Trace = run.trace!.id;
    ids.Span = run.trace!.spans.find((span) => span.events.length > 1)!.id;
    for (const question of ["Second", "Third"]) await settled(t.client, (await admit(t.client, { question, conversationId: ids.Conversation })).run.id);
    await settled(t.client, (await admit(t.client, { question: "Elsewhere" })).run.id);
    const published = await publish(t.client, { title: "Paged report", content: "v1" });
    ids.Publication = published.version.publication.id;
    ids.PublicationVersion = published.version.id;
    for (const content of ["v2", "v3"]) await publish(t.client, { publicationId: ids.Publication, content });
    for (const title of ["Second report", "Third report"]) {
      const other = await publish(t.client, { title, content: title });
      await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: other.version.publication.id } });
    }
    await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: ids.Publication } });
    for (const name of ["a", "b"]) await t.client.request(CreateApiKeyDocument, { input: { name } });
    for (const title of ["North", "South"]) await createWorkspace(t.client, `${title} goal`);

    // Of every other list, a few items, written as the runtime, the services and the webhook relay write them.
    const prisma = t.app.db.prisma;
    const [runId, workspaceId, conversationId] = [dbIdOf(ids.Run), dbIdOf(ids.Workspace), dbIdOf(ids.Conversation)];
    const publication = await prisma.publication.findUniqueOrThrow({ where: { id: dbIdOf(ids.Publication) }, include: { versions: true } });
    const me = publication.ownerId;
    const versionIds = publication.versions.map((version) => version.id);
    await prisma.publicationVersion.updateMany({ where: { id: { in: versionIds } }, data: { originRunId: runId } });
    const webhooks = [];
    for (let i = 0; i < 3; i += 1) {
      await prisma.materialUse.create({
        data: { runId, publicationId: publication.id, version: 10 + i, publicationVersionId: dbIdOf(ids.PublicationVersion), stage: "CONSUMED" },
      });
      await prisma.checkpointProposal.create({ data: { runId, workspaceId, expectedRevision: 0, proposal: {} } });
      await prisma.linkRefusal.create({ data: { workspaceId, targetKind: "PUBLICATION", targetId: `p${i}`, runId, reason: "WORKSPACE_ARCHIVED" } });
      const message = await prisma.message.create({ data: { conversationId, seq: 1000 + i, role: "TOOL", content: "big", runId } });
      await prisma.spill.create({
        data: {
          handle: `spill://apollo/${i}`,
          runId,
          conversationId,
          messageId: message.id,
          toolCallId: `c${i}`,
          toolName: "t",
          sizeBytes: 3,
          sizeChars: 3,
          preview: "b",
          strategy: "head",
        },
      });
      const requestedAt = new Date(Date.now() + i);
      await prisma.toolApproval.create({
        data: {
          runId,
          messageId: message.id,
          toolCallId: `c${i}`,
          toolName: "t",
          arguments: "{}",
          requestedAt,
          expiresAt: new Date(requestedAt.getTime() + 3_600_000),
        },
      });
      await prisma.runInput.create({ data: { runId, text: `Also look at ${i}`, status: "RELEASED", releasedAt: new Date() } });
      await prisma.mcpServer.create({ data: { ownerId: me, name: `server-${i}`, transport: "HTTP", url: "https://mcp.example.com/", enabled: false } });
      await prisma.artifact.create({ data: { ownerId: me, name: `notes-${i}.md`, mimeType: "text/markdown", size: 5, content: "notes" } });
      webhooks.push(
        await prisma.webhook.create({
          data: { ownerId: me, url: "https://hooks.example.com/", events: ["WORKSPACE_ARCHIVED"], secret: "sealed", enabled: false },
        }),
      );
    }
    ids.Webhook = encodeGlobalId("Webhook", webhooks[0]!.id);
    const delivered = await prisma.webhookMessage.create({
      data: { webhookId: webhooks[0]!.id, eventId: "evt-1", type: "WORKSPACE_ARCHIVED", body: "{}", status: "FAILED", attempts: 3, nextAttemptAt: null },
    });
    for (const number of [1, 2, 3]) {
      await prisma.webhookAttempt.create({
        data: { webhookId: webhooks[0]!.id, messageId: delivered.id, eventId: "evt-1", number, statusCode: 500, durationMs: 5 },
      });
    }
    await t.app.services.checkpoints.apply(
      { principalId: me },
      workspaceId,
      0,
      { summary: "Recorded", questions: [] },
      { origin: "MODEL_SUGGESTION", originRunId: runId, acceptedVersionIds: versionIds, sourceVersionIds: versionIds },
    );
    // Scores on the run, a version, a span and the checkpoint revision, on three configs.
    const checkpoint = await prisma.checkpointVersion.findFirstOrThrow({ where: { workspaceId } });
    const targets = [
      ["RUN", runId],
      ["PUBLICATION_VERSION", dbIdOf(ids.PublicationVersion)],
      ["SPAN", dbIdOf(ids.Span)],
      ["CHECKPOINT_VERSION", checkpoint.id],
    ] as const;
    for (let i = 0; i < 3; i += 1) {
      const config = await prisma.scoreConfig.create({ data: { ownerId: me, name: `config-${i}`, kind: "NUMERIC" } });
      for (const [targetKind, targetId] of targets) {
        await prisma.score.create({ data: { ownerId: me, configId: config.id, targetKind, targetId, value: i, source: "HUMAN", createdById: me } });
      }
    }
  }, 120_000);
  afterAll(async () => {
    await apollo?.close();
    await t?.close();
  });

  const onCheckpoint = (inner: string) => (list: string) =>
    `node(id: $id) { id ... on Workspace { checkpoint { ... on Checkpoint { id ${inner.replace("LIST", list)} } } } }`;
  const CASES: PagedCase[] = [
    { type: "Query", field: "runs" },
    { type: "Query", field: "workspaces" },
    { type: "Query", field: "conversations" },
    { type: "Query", field: "publications" },
    { type: "Query", field: "apiKeys" },
    { type: "Query", field: "agentProfiles" },
    { type: "Query", field: "mcpServers" },
    { type: "Query", field: "artifacts" },
    { type: "Query", field: "webhooks" },
    { type: "Query", field: "scoreConfigs" },
    { type: "Run", field: "scores", parent: () => ids.Run! },
    { type: "PublicationVersion", field: "scores", parent: () => ids.PublicationVersion! },
    { type: "Span", field: "scores", parent: () => ids.Span! },
    { type: "Checkpoint", field: "scores", parent: () => ids.Workspace!, select: onCheckpoint("LIST") },
    { type: "Principal", field: "apiKeys", select: (list) => `viewer { id ${list} }` },
    { type: "Webhook", field: "deliveries", parent: () => ids.Webhook! },
    { type: "Workspace", field: "links", parent: () => ids.Workspace! },
    { type: "Workspace", field: "goalVersions", parent: () => ids.Workspace! },
    { type: "Workspace", field: "schedules", parent: () => ids.Workspace! },
    { type: "Schedule", field: "fires", parent: () => ids.Schedule! },
    { type: "Conversation", field: "runs", parent: () => ids.Conversation! },
    { type: "Conversation", field: "messages", parent: () => ids.Conversation! },
    { type: "Publication", field: "versions", parent: () => ids.Publication! },
    { type: "PublicationVersion", field: "consumedBy", parent: () => ids.PublicationVersion! },
    { type: "Run", field: "messages", parent: () => ids.Run! },
    { type: "Run", field: "attempts", parent: () => ids.Run! },
    { type: "Run", field: "inputs", parent: () => ids.Run! },
    { type: "Run", field: "pendingApprovals", parent: () => ids.Run! },
    { type: "Run", field: "spills", parent: () => ids.Run! },
    { type: "Run", field: "materialUses", parent: () => ids.Run! },
    { type: "Run", field: "acceptedPublicationVersions", parent: () => ids.Run! },
    { type: "Run", field: "checkpointProposals", parent: () => ids.Run! },
    { type: "Run", field: "linkRefusals", parent: () => ids.Run! },
    { type: "Trace", field: "spans", parent: () => ids.Trace! },
    { type: "Span", field: "events", parent: () => ids.Span! },
    { type: "Checkpoint", field: "acceptedPublicationVersions", parent: () => ids.Workspace!, select: onCheckpoint("LIST") },
    { type: "Checkpoint", field: "sourceDependencies", parent: () => ids.Workspace!, select: onCheckpoint("LIST") },
    { type: "CheckpointSectionProvenance", field: "sources", parent: () => ids.Workspace!, select: onCheckpoint("summaryProvenance { LIST }") },
  ];

  const PAGE = "edges { cursor node { id } } pageInfo { hasNextPage endCursor } totalCount countCapped";
  const documentOf = ({ type, field, parent, select }: PagedCase) => {
    const list = `list: ${field}(first: $first, after: $after) { ${PAGE} }`;
    const selection = select ? select(list) : type === "Query" ? list : `node(id: $id) { id ... on ${type} { ${list} } }`;
    return `query Paged(${parent ? "$id: ID!, " : ""}$first: Int, $after: String) { ${selection} }`;
  };
  type Page = { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null }; totalCount: number };
  /** The `list` alias wherever the document put it. */
  const listOf = (data: unknown): Page => {
    const find = (value: unknown): Page | undefined => {
      if (value === null || typeof value !== "object") return undefined;
      if ("list" in value) return (value as { list: Page }).list;
      for (const inner of Object.values(value)) {
        const found = find(inner);
        if (found) return found;
      }
      return undefined;
    };
    const page = find(data);
    expect(page, "the list in the response").toBeDefined();
    return page!;
  };

  it("configures relayStylePagination on every connection of the schema", () => {
    const policies = everyConnectionPaginated();
    const fields = connectionFields();
    expect(fields.length).toBeGreaterThan(25);
    for (const { type, field } of fields) expect(typeof policies[type]?.fields[field]?.merge, `${type}.${field}`).toBe("function");
  });

  it("pages every connection of the schema below, or names where and why it is paged otherwise", () => {
    const paged = new Set(CASES.map((c) => `${c.type}.${c.field}`));
    expect(paged.size).toBe(CASES.length);
    const fields = connectionFields().map(({ type, field }) => `${type}.${field}`);
    expect(fields.filter((field) => !paged.has(field) && !(field in PAGED_ELSEWHERE))).toEqual([]);
    // Every case and every exception names a connection the schema has.
    expect([...paged, ...Object.keys(PAGED_ELSEWHERE)].filter((field) => !fields.includes(field))).toEqual([]);
  });

  it.each(CASES.map((c) => [`${c.type}.${c.field}`, c] as const))("pages %s one item at a time with fetchMore, every item once", async (_name, list) => {
    const query = gql(documentOf(list));
    const variables = { ...(list.parent ? { id: list.parent() } : {}), first: 1 };
    // What the server lists, read in one page without the cache.
    const everything = await fetch(t.server!.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: documentOf(list), variables: { ...variables, first: 100 } }),
    });
    const body = (await everything.json()) as { data: unknown; errors?: unknown };
    expect(body.errors).toBeUndefined();
    const expected = listOf(body.data);
    // More than one page (a run's one attempt and the one stored agent profile excepted).
    expect(expected.edges.length).toBeGreaterThan(["attempts", "agentProfiles"].includes(list.field) ? 0 : 1);

    let page = listOf((await apollo.client.query({ query, variables })).data);
    const watched = apollo.client.watchQuery({ query, variables });
    for (let pages = 1; page.pageInfo.hasNextPage; pages += 1) {
      expect(pages).toBeLessThan(50);
      const more = await watched.fetchMore({ variables: { after: page.pageInfo.endCursor } });
      page = listOf(more.data);
    }
    const merged = listOf(apollo.cache.readQuery({ query, variables }));
    expect(merged.edges.map((edge) => edge.node.id)).toEqual(expected.edges.map((edge) => edge.node.id));
    expect(merged.totalCount).toBe(expected.edges.length);
    expect(merged.pageInfo.hasNextPage).toBe(false);
  });
});
