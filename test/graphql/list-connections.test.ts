// Lists that grow with use are Relay connections read a page at a time: `first` items, and after
// `after` — the cursor of the last item the client has (its id) — the next ones in the list's
// documented order; `last` and `before` page backwards. A client paging with a small `first`
// gets every item exactly once, in that order, also where items tie on the first order column,
// and `totalCount` counts them all; a page size beyond the list's maximum, and a cursor that
// names nothing of this list, are refused as errors rather than served as an empty page.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contentHash } from "../../src/domain/research/publication-service.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** One growing list: a document whose `list` alias pages it, and what paging must yield. */
type ListCase = {
  field: string;
  /** Selects `list: <field>(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} }` somewhere, under `$parent` when it has one. */
  document: string;
  parent?: string;
  /** Every item's id, in the documented order. */
  items: string[];
  /** An item of the same type that is not in this list (another parent's, or another principal's). */
  foreign: string;
  maxSize: number;
};

const ITEMS = 5;
const PAGE = 2;
/** The moment most items share, so that the order's tiebreak (the id) decides among them. */
const TIE = new Date("2026-03-01T10:00:00.000Z");
/** Items 0–4: two at an earlier moment, three tied at TIE; ids are made so that the id order is the reverse of creation. */
const momentOf = (i: number) => (i < 2 ? new Date(TIE.getTime() - (2 - i) * 1000) : TIE);
const idOf = (prefix: string, i: number) => `${prefix}-${9 - i}`;

/** What each document selects of its connection. */
const PAGE_FIELDS = "edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount countCapped";

const nodeDocument = (type: string, field: string) => /* GraphQL */ `
  query Page($parent: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    node(id: $parent) { ... on ${type} { list: ${field}(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } } }
  }
`;

describe.each(backends)("list connections paged on %s", (backend) => {
  let t: TestApp;
  const cases: ListCase[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend);
    const prisma = t.app.db.prisma;
    const me = await viewerId(t);
    const other = await prisma.principal.create({ data: { name: "someone else" } });
    const workspace = await createWorkspace(t.client);
    const workspaceId = dbId(workspace.id);
    // Runs are admitted but never executed (no worker): their lists hold exactly what is written below.
    const [run, otherRun] = [await admit(t.client, { question: "lists", workspaceId: workspace.id }), await admit(t.client, { question: "other" })];
    const [runId, otherRunId] = [dbId(run.run.id), dbId(otherRun.run.id)];
    const conversationId = dbId(run.run.conversation.id);
    const publication = await prisma.publication.create({ data: { ownerId: me, title: "Versions", latestVersion: ITEMS + 2 } });
    const version = (n: number, data: { id?: string; originRunId?: string; createdAt?: Date } = {}) =>
      prisma.publicationVersion.create({
        data: { publicationId: publication.id, version: n, content: `v${n}`, contentHash: contentHash(`v${n}`), asOf: TIE, ...data },
      });
    const consumed = await version(ITEMS + 1);
    const foreignVersion = await version(ITEMS + 2);

    // Trace.spans: start order, then id.
    await prisma.trace.createMany({
      data: [
        { id: runId, runId },
        { id: otherRunId, runId: otherRunId },
      ],
    });
    const spans = await createEach((i) =>
      prisma.span.create({ data: { id: idOf("span", i), traceId: runId, kind: "TURN", name: `turn ${i}`, startedAt: momentOf(i) } }),
    );
    const otherSpan = await prisma.span.create({ data: { traceId: otherRunId, kind: "RUN", name: "other", startedAt: TIE } });
    cases.push({
      field: "Trace.spans",
      document: nodeDocument("Trace", "spans"),
      parent: encodeGlobalId("Trace", runId),
      items: sortedIds("Span", spans, (s) => [s.startedAt.getTime(), s.id]),
      foreign: encodeGlobalId("Span", otherSpan.id),
      maxSize: 1_000,
    });

    // Span.events: recording order (seq).
    const events = await createEach((i) =>
      prisma.spanEvent.create({
        data: { id: idOf("event", i), spanId: spans[0]!.id, seq: 10 + i, kind: "THINKING", payload: `e${i}`, payloadSize: 2, at: TIE },
      }),
    );
    const otherEvent = await prisma.spanEvent.create({ data: { spanId: otherSpan.id, seq: 1, kind: "THINKING", payload: "x", payloadSize: 1, at: TIE } });
    cases.push({
      field: "Span.events",
      document: nodeDocument("Span", "events"),
      parent: encodeGlobalId("Span", spans[0]!.id),
      items: sortedIds("SpanEvent", events, (e) => [e.seq, e.id]),
      foreign: encodeGlobalId("SpanEvent", otherEvent.id),
      maxSize: 1_000,
    });

    // Run.attempts: by number.
    await createEach((i) => prisma.runAttempt.create({ data: { runId, number: i + 1, instance: `host:${i}`, startedAt: momentOf(i) } }));
    await prisma.runAttempt.create({ data: { runId: otherRunId, number: 1, instance: "elsewhere", startedAt: TIE } });
    cases.push({
      field: "Run.attempts",
      document: nodeDocument("Run", "attempts"),
      parent: run.run.id,
      items: Array.from({ length: ITEMS }, (_, i) => encodeGlobalId("RunAttempt", `${runId}/${i + 1}`)),
      foreign: encodeGlobalId("RunAttempt", `${otherRunId}/1`),
      maxSize: 500,
    });

    // Run.spills: oldest first, then id. A spill is the preview of a TOOL message of the run.
    const messages = await createEach((i) =>
      prisma.message.create({ data: { conversationId, seq: 100 + i, role: "TOOL", content: `result ${i}`, toolCallId: `call-${i}`, runId } }),
    );
    const spillOf = (i: number, run: string, message: string, createdAt: Date, id?: string) =>
      prisma.spill.create({
        data: {
          ...(id ? { id } : {}),
          handle: `spill://researcher/${run}/${message}`,
          runId: run,
          conversationId,
          messageId: message,
          toolCallId: `call-${i}`,
          toolName: "http_fetch",
          sizeBytes: 9,
          sizeChars: 9,
          preview: "result",
          strategy: "head",
          createdAt,
        },
      });
    const spills = await createEach((i) => spillOf(i, runId, messages[i]!.id, momentOf(i), idOf("spill", i)));
    const otherMessage = await prisma.message.create({
      data: { conversationId, seq: 200, role: "TOOL", content: "other", toolCallId: "call-x", runId: otherRunId },
    });
    const otherSpill = await spillOf(9, otherRunId, otherMessage.id, TIE);
    cases.push({
      field: "Run.spills",
      document: nodeDocument("Run", "spills"),
      parent: run.run.id,
      items: sortedIds("Spill", spills, (s) => [s.createdAt.getTime(), s.id]),
      foreign: encodeGlobalId("Spill", otherSpill.id),
      maxSize: 500,
    });

    // Run.materialUses and PublicationVersion.consumedBy: oldest first, then id.
    // (A run has one entry per material and stage; these name versions 1–5 of the publication as asked for.)
    const uses = await createEach((i) =>
      prisma.materialUse.create({
        data: {
          id: idOf("use", i),
          runId,
          publicationId: publication.id,
          version: i + 1,
          publicationVersionId: consumed.id,
          stage: "CONSUMED",
          createdAt: momentOf(i),
        },
      }),
    );
    const otherUse = await prisma.materialUse.create({
      data: { runId: otherRunId, publicationId: publication.id, version: ITEMS + 2, publicationVersionId: foreignVersion.id, stage: "CONSUMED" },
    });
    const useIds = sortedIds("MaterialUse", uses, (u) => [u.createdAt.getTime(), u.id]);
    cases.push({
      field: "Run.materialUses",
      document: nodeDocument("Run", "materialUses"),
      parent: run.run.id,
      items: useIds,
      foreign: encodeGlobalId("MaterialUse", otherUse.id),
      maxSize: 1_000,
    });
    cases.push({
      field: "PublicationVersion.consumedBy",
      document: nodeDocument("PublicationVersion", "consumedBy"),
      parent: encodeGlobalId("PublicationVersion", consumed.id),
      items: useIds,
      foreign: encodeGlobalId("MaterialUse", otherUse.id),
      maxSize: 500,
    });

    // Run.acceptedPublicationVersions: the versions published from the run, oldest first, then id.
    const accepted = await createEach((i) => version(i + 1, { id: idOf("accepted", i), originRunId: runId, createdAt: momentOf(i) }));
    cases.push({
      field: "Run.acceptedPublicationVersions",
      document: nodeDocument("Run", "acceptedPublicationVersions"),
      parent: run.run.id,
      items: sortedIds("PublicationVersion", accepted, (v) => [v.createdAt.getTime(), v.id]),
      foreign: encodeGlobalId("PublicationVersion", foreignVersion.id),
      maxSize: 500,
    });

    // Run.checkpointProposals and Run.linkRefusals: oldest first, then id.
    const proposals = await createEach((i) =>
      prisma.checkpointProposal.create({
        data: { id: idOf("proposal", i), runId, workspaceId, expectedRevision: 0, proposal: { summary: `p${i}` }, createdAt: momentOf(i) },
      }),
    );
    const otherProposal = await prisma.checkpointProposal.create({ data: { runId: otherRunId, workspaceId, expectedRevision: 0, proposal: {} } });
    cases.push({
      field: "Run.checkpointProposals",
      document: nodeDocument("Run", "checkpointProposals"),
      parent: run.run.id,
      items: sortedIds("CheckpointProposal", proposals, (p) => [p.createdAt.getTime(), p.id]),
      foreign: encodeGlobalId("CheckpointProposal", otherProposal.id),
      maxSize: 500,
    });
    const refusals = await createEach((i) =>
      prisma.linkRefusal.create({
        data: {
          id: idOf("refusal", i),
          workspaceId,
          targetKind: "PUBLICATION",
          targetId: `target-${i}`,
          runId,
          reason: "WORKSPACE_ARCHIVED",
          createdAt: momentOf(i),
        },
      }),
    );
    const otherRefusal = await prisma.linkRefusal.create({
      data: { workspaceId, targetKind: "RUN", targetId: otherRunId, runId: otherRunId, reason: "WORKSPACE_ARCHIVED" },
    });
    cases.push({
      field: "Run.linkRefusals",
      document: nodeDocument("Run", "linkRefusals"),
      parent: run.run.id,
      items: sortedIds("LinkRefusal", refusals, (r) => [r.createdAt.getTime(), r.id]),
      foreign: encodeGlobalId("LinkRefusal", otherRefusal.id),
      maxSize: 500,
    });

    // Run.inputs: oldest first, then id.
    const inputs = await createEach((i) => prisma.runInput.create({ data: { id: idOf("input", i), runId, text: `steer ${i}`, createdAt: momentOf(i) } }));
    const otherInput = await prisma.runInput.create({ data: { runId: otherRunId, text: "theirs" } });
    cases.push({
      field: "Run.inputs",
      document: nodeDocument("Run", "inputs"),
      parent: run.run.id,
      items: sortedIds("RunInput", inputs, (r) => [r.createdAt.getTime(), r.id]),
      foreign: encodeGlobalId("RunInput", otherInput.id),
      maxSize: 500,
    });

    // Principal.apiKeys: oldest first, then id (the development principal has none of its own yet).
    const keys = await createEach((i) =>
      prisma.apiKey.create({ data: { id: idOf("key", i), principalId: me, name: `key ${i}`, prefix: `dsk_${i}`, hash: `hash-${i}`, createdAt: momentOf(i) } }),
    );
    const otherKey = await prisma.apiKey.create({ data: { principalId: other.id, name: "theirs", prefix: "dsk_x", hash: "hash-x" } });
    cases.push({
      field: "Principal.apiKeys",
      document: /* GraphQL */ `query Page($first: Int, $after: String, $last: Int, $before: String) { viewer { list: apiKeys(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } } }`,
      items: sortedIds("ApiKey", keys, (k) => [k.createdAt.getTime(), k.id]),
      foreign: encodeGlobalId("ApiKey", otherKey.id),
      maxSize: 500,
    });

    // Query.mcpServers: by name, then id.
    const servers = await createEach((i) =>
      prisma.mcpServer.create({
        data: { id: idOf("server", i), ownerId: me, name: `tools-${i}`, transport: "HTTP", url: "https://mcp.example.com/mcp", enabled: false },
      }),
    );
    const otherServer = await prisma.mcpServer.create({
      data: { ownerId: other.id, name: "tools-0", transport: "HTTP", url: "https://mcp.example.com/mcp", enabled: false },
    });
    cases.push({
      field: "Query.mcpServers",
      document: /* GraphQL */ `query Page($first: Int, $after: String, $last: Int, $before: String) { list: mcpServers(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } }`,
      items: sortedIds("McpServer", servers, (s) => [s.name, s.id]),
      foreign: encodeGlobalId("McpServer", otherServer.id),
      maxSize: 500,
    });

    // Query.scoreConfigs and Run.scores: newest first, then id (descending).
    const configs = await createEach((i) =>
      prisma.scoreConfig.create({ data: { id: idOf("config", i), ownerId: me, name: `config-${i}`, kind: "NUMERIC", createdAt: momentOf(i) } }),
    );
    const otherConfig = await prisma.scoreConfig.create({ data: { ownerId: other.id, name: "config-0", kind: "NUMERIC", createdAt: TIE } });
    cases.push({
      field: "Query.scoreConfigs",
      document: /* GraphQL */ `query Page($first: Int, $after: String, $last: Int, $before: String) { list: scoreConfigs(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } }`,
      items: sortedIds("ScoreConfig", configs, (c) => [c.createdAt.getTime(), c.id]).reverse(),
      foreign: encodeGlobalId("ScoreConfig", otherConfig.id),
      maxSize: 500,
    });
    const scoreOf = (i: number, targetId: string, id?: string) =>
      prisma.score.create({
        data: {
          ...(id ? { id } : {}),
          ownerId: me,
          configId: configs[0]!.id,
          targetKind: "RUN",
          targetId,
          value: i,
          source: "HUMAN",
          createdById: me,
          createdAt: momentOf(i),
        },
      });
    const scores = await createEach((i) => scoreOf(i, runId, idOf("score", i)));
    const otherScore = await scoreOf(9, otherRunId);
    cases.push({
      field: "Run.scores",
      document: nodeDocument("Run", "scores"),
      parent: run.run.id,
      items: sortedIds("Score", scores, (s) => [s.createdAt.getTime(), s.id]).reverse(),
      foreign: encodeGlobalId("Score", otherScore.id),
      maxSize: 500,
    });

    // Query.agentProfiles: by name, newest version first (the built-in researcher's version among them).
    for (const [i, [name, version]] of (
      [
        ["scout", 1],
        ["reviewer", 1],
        ["scout", 2],
        ["reviewer", 2],
      ] as const
    ).entries()) {
      await prisma.agentProfile.create({ data: { id: idOf("profile", i), name, version, contentHash: `hash-${i}`, systemPrompt: `${name} ${version}` } });
    }
    const profiles = await prisma.agentProfile.findMany();
    cases.push({
      field: "Query.agentProfiles",
      document: /* GraphQL */ `query Page($first: Int, $after: String, $last: Int, $before: String) { list: agentProfiles(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } }`,
      items: sortedIds("AgentProfile", profiles, (p) => [p.name, -p.version]),
      // Profiles are everyone's: no list holds another's, so the foreign item is one that does not exist.
      foreign: encodeGlobalId("AgentProfile", "no-such-profile"),
      maxSize: 500,
    });

    // Checkpoint.acceptedPublicationVersions and sourceDependencies, and a section's sources: ids
    // kept on the revision, in the order recorded.
    const recorded = [...accepted].reverse().map((v) => v.id);
    await t.app.services.checkpoints.apply(
      { principalId: me },
      workspaceId,
      0,
      { summary: "Recorded", questions: [] },
      {
        origin: "MODEL_SUGGESTION",
        originRunId: runId,
        acceptedVersionIds: recorded,
        sourceVersionIds: recorded,
      },
    );
    const checkpointDocument = (field: string) => /* GraphQL */ `
      query Page($parent: ID!, $first: Int, $after: String, $last: Int, $before: String) {
        node(id: $parent) { ... on Workspace { checkpoint { ... on Checkpoint { list: ${field}(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } } } } }
      }
    `;
    for (const field of ["acceptedPublicationVersions", "sourceDependencies"]) {
      cases.push({
        field: `Checkpoint.${field}`,
        document: checkpointDocument(field),
        parent: workspace.id,
        items: recorded.map((id) => encodeGlobalId("PublicationVersion", id)),
        foreign: encodeGlobalId("PublicationVersion", foreignVersion.id),
        maxSize: 500,
      });
    }
    cases.push({
      field: "CheckpointSectionProvenance.sources",
      document: /* GraphQL */ `
        query Page($parent: ID!, $first: Int, $after: String, $last: Int, $before: String) {
          node(id: $parent) { ... on Workspace { checkpoint { ... on Checkpoint { summaryProvenance { list: sources(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } } } } } }
        }
      `,
      parent: workspace.id,
      items: recorded.map((id) => encodeGlobalId("PublicationVersion", id)),
      foreign: encodeGlobalId("PublicationVersion", foreignVersion.id),
      maxSize: 500,
    });
  }, 60_000);
  afterAll(async () => t?.close());

  const read = async (list: ListCase, variables: { first?: number; after?: string; last?: number; before?: string }) => {
    const result = await graphql(t, list.document, { ...(list.parent ? { parent: list.parent } : {}), ...variables });
    const page = findList(result.data);
    return { ids: page?.edges.map((edge) => edge.node.id), cursors: page?.edges.map((edge) => edge.cursor), page, errors: result.errors };
  };

  const caseOf = (field: string) => cases.find((list) => list.field === field)!;

  it("covers every growing list", () => {
    expect(cases.map((c) => c.field).sort()).toEqual(GROWING_LISTS);
  });

  it.each(GROWING_LISTS)("pages through %s: every item exactly once, in the documented order, ties included", async (field) => {
    const list = caseOf(field);
    const pages: string[][] = [];
    let after: string | undefined;
    for (let more = true; more && pages.length <= ITEMS; ) {
      const page = await read(list, { first: PAGE, after });
      expect(page.errors).toBeUndefined();
      expect(page.ids!.length).toBeLessThanOrEqual(PAGE);
      // An item's cursor is its id; the page says whether another follows, and counts the whole list.
      expect(page.cursors).toEqual(page.ids);
      expect(page.page).toMatchObject({ totalCount: ITEMS, countCapped: false, pageInfo: { hasPreviousPage: after !== undefined } });
      pages.push(page.ids!);
      after = page.page!.pageInfo.endCursor ?? undefined;
      more = page.page!.pageInfo.hasNextPage;
    }
    expect(pages.flat()).toEqual(list.items);
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    // Backwards from the end, with `last` and `before`: the same items, each once.
    const backwards: string[][] = [];
    let before: string | undefined;
    for (let more = true; more && backwards.length <= ITEMS; ) {
      const page = await read(list, { last: PAGE, before });
      expect(page.errors).toBeUndefined();
      backwards.unshift(page.ids!);
      before = page.page!.pageInfo.startCursor ?? undefined;
      more = page.page!.pageInfo.hasPreviousPage;
    }
    expect(backwards.flat()).toEqual(list.items);
    expect(backwards.map((page) => page.length)).toEqual([1, 2, 2]);
    // Without `first`, the default page holds them all.
    expect((await read(list, {})).ids).toEqual(list.items);
  });

  it.each(GROWING_LISTS)("refuses a page size of %s outside 1…its maximum, naming `first`", async (field) => {
    const list = caseOf(field);
    const tooLarge = await read(list, { first: list.maxSize + 1 });
    expect(tooLarge.errors).toMatchObject([
      {
        message: `first: ${list.maxSize + 1} asks for more than ${list.maxSize} items; page through the list with "after" instead.`,
        extensions: { code: "PAGE_TOO_LARGE" },
      },
    ]);
    // The largest page is served.
    expect((await read(list, { first: list.maxSize })).ids).toEqual(list.items);
    const none = await read(list, { first: 0 });
    expect(none.errors).toMatchObject([{ message: expect.stringMatching(/^first: 0 /), extensions: { code: "BAD_USER_INPUT" } }]);
    expect(none.ids).toBeUndefined();
  });

  it.each(GROWING_LISTS)("refuses an `after` in %s that names another list's item or no item of its type", async (field) => {
    const list = caseOf(field);
    for (const after of [list.foreign, encodeGlobalId("Workspace", "no-such-id"), "not a global id"]) {
      const page = await read(list, { first: PAGE, after });
      expect(page.errors, `after ${after}`).toMatchObject([
        { message: `after: ${JSON.stringify(after)} is not the cursor of a ${typeOf(list.foreign)} in this list.`, extensions: { code: "BAD_USER_INPUT" } },
      ]);
      expect(page.ids).toBeUndefined();
    }
  });
});

/** Every list connection of the schema read by its own keyset query; each has a case above. */
const GROWING_LISTS = [
  "Checkpoint.acceptedPublicationVersions",
  "Checkpoint.sourceDependencies",
  "CheckpointSectionProvenance.sources",
  "PublicationVersion.consumedBy",
  "Principal.apiKeys",
  "Query.agentProfiles",
  "Query.mcpServers",
  "Run.acceptedPublicationVersions",
  "Run.attempts",
  "Run.checkpointProposals",
  "Run.inputs",
  "Run.linkRefusals",
  "Run.materialUses",
  "Run.spills",
  "Run.scores",
  "Query.scoreConfigs",
  "Span.events",
  "Trace.spans",
].sort();

async function createEach<T>(create: (i: number) => Promise<T>): Promise<T[]> {
  const created: T[] = [];
  for (let i = 0; i < ITEMS; i += 1) created.push(await create(i));
  return created;
}

/** Global ids in the order of `key` (compared element by element). */
function sortedIds<T extends { id: string }>(typename: string, items: T[], key: (item: T) => (string | number)[]): string[] {
  const compare = (a: (string | number)[], b: (string | number)[]): number => {
    for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return 0;
  };
  return [...items].sort((a, b) => compare(key(a), key(b))).map((item) => encodeGlobalId(typename, item.id));
}

const dbId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").split(":").slice(1).join(":");
const typeOf = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").split(":")[0];

async function viewerId(t: TestApp): Promise<string> {
  const result = await graphql(t, "{ viewer { id } }");
  return dbId((result.data as { viewer: { id: string } }).viewer.id);
}

type Page = {
  edges: { cursor: string; node: { id: string } }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: number;
  countCapped: boolean;
};

/** The `list` alias anywhere in the data. */
function findList(data: unknown): Page | undefined {
  if (data === null || typeof data !== "object") return undefined;
  if ("list" in data) return (data as { list: Page | null }).list ?? undefined;
  for (const value of Object.values(data)) {
    const found = findList(value);
    if (found) return found;
  }
  return undefined;
}

async function graphql(t: TestApp, query: string, variables: Record<string, unknown> = {}): Promise<{ data?: unknown; errors?: unknown }> {
  const response = await t.app.yoga.fetch(
    new Request("http://dossier.test/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query, variables }) }),
  );
  return (await response.json()) as { data?: unknown; errors?: unknown };
}
