// Every list the API serves is limited in SQL, not in memory: a page of 20 reads 20 rows (plus
// one to know there is more), however many the parent holds. Asserted from the statements the
// Prisma client sends, for every connection field of the schema, every plain list read from the
// database (paged by first/after, or bounded by what validation lets in) and `Workspace.goal`. A relation
// read in its parent's statement (a lateral join) has its own LIMIT there.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getNamedType, isListType, isNonNullType, isObjectType, parse, TypeInfo, visit, visitWithTypeInfo, type GraphQLOutputType } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmitRunDocument,
  CreateApiKeyDocument,
  CreateScheduleDocument,
  LinkToWorkspaceDocument,
  PublishVersionDocument,
  UpdateGoalDocument,
} from "../../sdk/generated/graphql.js";
import { PUBLICATION_SOURCES_MAX } from "../../src/domain/research/publication-service.js";
import { getDatamodel } from "../../src/generated/pothos-types.js";
import { COUNT_BOUND } from "../../src/graphql/counted-connection.js";
import { schema } from "../../src/graphql/schema.js";
import { RUN_MATERIALS_MAX } from "../../src/domain/runs/admission-request.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/**
 * One document that pages every connection field and every plain list (two items a page where
 * it can ask), reads every workspace's goal, and reads the lists of one workspace, one run and
 * one publication version that hold some of everything.
 */
/** A page of a list connection: its items' ids, and whether there is more. */
const IDS = "edges { node { id } } pageInfo { hasNextPage }";

const EVERY_LIST = /* GraphQL */ `
  query EveryList($workspace: ID!, $run: ID!, $version: ID!) {
    workspaces(first: 2) {
      edges { node { id goal { version } goalVersions(first: 2) { edges { node { version } } pageInfo { hasNextPage endCursor } }
        links(first: 2) { edges { node { id } } pageInfo { hasNextPage } } } }
      pageInfo { hasNextPage }
    }
    conversations(first: 2) {
      edges { node { messages(first: 2) { edges { node { id } } pageInfo { hasNextPage } } runs(first: 2) { edges { node { id messages(first: 2) { edges { node { id } } pageInfo { hasNextPage } } } } pageInfo { hasNextPage } } } }
      pageInfo { hasNextPage }
    }
    publications(first: 2) { edges { node { versions(first: 2) { edges { node { version } } pageInfo { hasNextPage } } } } pageInfo { hasNextPage } }
    runs(first: 2) { edges { node { id attempts(first: 2) { ${IDS} } trace { ... on Trace { spans(first: 2) { edges { node { id events(first: 2) { ${IDS} } } } } } } } } pageInfo { hasNextPage } }
    artifacts(first: 2) { edges { node { id } } pageInfo { hasNextPage } }
    apiKeys(first: 2) { edges { node { id } } pageInfo { hasNextPage } }
    viewer { apiKeys(first: 2) { ${IDS} } }
    mcpServers(first: 2) { edges { node { id name args envNames headerNames } } pageInfo { hasNextPage } }
    webhooks(first: 2) { edges { node { id events deliveries(first: 2) { edges { node { attempt } } pageInfo { hasNextPage } } } } }
    skills { name }
    modelPrices { model }
    agentProfiles(first: 2) { edges { node { id tools skills } } pageInfo { hasNextPage } }
    scoreConfigs(first: 2) { ${IDS} }
    workspace: node(id: $workspace) {
      ... on Workspace {
        checkpoint { ...CheckpointLists ... on UnavailableCheckpoint { scores(first: 2) { ${IDS} } } }
        checkpointVersions(first: 2) { ...CheckpointLists }
        schedules(first: 2) { edges { node { id fires(first: 2) { ${IDS} } } } pageInfo { hasNextPage } }
        historyCatalog(first: 2) { entries { title via versions { version sources { version } humanScores { configName } } } edges { node { title } } pageInfo { endCursor hasNextPage } }
      }
    }
    run: node(id: $run) {
      ... on Run {
        attempts(first: 2) { ${IDS} }
        inputs(first: 2) { ${IDS} }
        materials { position publicationVersion { id } }
        materialUses(first: 2) { ${IDS} }
        acceptedPublicationVersions(first: 2) { ${IDS} }
        checkpointProposals(first: 2) { ${IDS} }
        linkRefusals(first: 2) { ${IDS} }
        spills(first: 2) { ${IDS} }
        pendingApprovals(first: 2) { ${IDS} }
        scores(first: 2) { ${IDS} }
        scoreSummary { configName labelCounts { label } }
        trace { ... on Trace { pins { kind } spans(first: 2) { edges { node { id events(first: 2) { ${IDS} } scores(first: 2) { ${IDS} } } } pageInfo { hasNextPage } } } }
      }
    }
    version: node(id: $version) {
      ... on PublicationVersion { sources { id } consumedBy(first: 2) { ${IDS} } scores(first: 2) { ${IDS} } }
    }
    searchHistory(workspaceId: $workspace, query: "answer", first: 2) { ... on SearchHistorySuccess { hits { id } complete } }
  }
  fragment CheckpointLists on Checkpoint {
    questions { id }
    nextSteps
    acceptedPublicationVersions(first: 2) { ${IDS} }
    citedMaterials { id }
    sourceDependencies(first: 2) { ${IDS} }
    summaryProvenance { sources(first: 2) { ${IDS} } }
    scores(first: 2) { ${IDS} }
    sections { section }
  }
`;

/** EVERY_LIST with every connection's count (the history catalog, computed from links, has none). */
const EVERY_COUNT = EVERY_LIST.replaceAll("pageInfo { hasNextPage", "totalCount countCapped pageInfo { hasNextPage");

/**
 * Plain lists with no SQL of their own: their items are held in a JSON or array column of the row
 * their parent was read from, or computed in memory. Everything else must be in the document.
 */
const NOT_READ_BY_THEIR_OWN_QUERY: Record<string, string> = {
  "AgentProfile.skills": "a JSON column of the profile version",
  "ApiKey.scopes": "an array column of the key",
  "AgentProfile.tools": "a JSON column of the profile version",
  "Checkpoint.nextSteps": "a JSON column of the checkpoint revision",
  "Checkpoint.questions": "a JSON column of the checkpoint revision",
  "Checkpoint.sections": "a JSON column of the checkpoint revision",
  "UnavailableCheckpoint.withheldSections": "a JSON column of the checkpoint revision",
  "HistoryCatalogEntry.via": "worked out from the links the catalog read",
  "McpServer.args": "an array column of the server",
  "McpServer.envNames": "the names in a JSON column of the server",
  "McpServer.headerNames": "the names in a JSON column of the server",
  "McpServerStatus.tools": "this instance's live connection to the server, in memory",
  "McpServerStatus.skippedTools": "the same connection's last listing, in memory (at most MCP_LIST_MAX_TOOLS entries)",
  "ReadableArguments.warnings": "worked out in memory from the call's arguments (at most two sentences)",
  "Run.tags": "an array column of the run (at most 20)",
  "Run.viewerOperations": "the request's key scopes or token grants, worked out in memory",
  "RunCaps.agents": "a JSON column of the key or schedule (at most 50)",
  "ScoreConfig.categories": "an array column of the score config",
  "ValidationError.issues": "the refused input's problems, in memory",
};

/** Every field of an object type whose type is a list, as Type.field (a connection's edges excepted: the connection is the list). */
function listFields(): string[] {
  const isList = (type: GraphQLOutputType): boolean => isListType(isNonNullType(type) ? type.ofType : type);
  return Object.values(schema.getTypeMap())
    .filter(isObjectType)
    .filter((type) => !type.name.startsWith("__") && !type.name.endsWith("Connection"))
    .flatMap((type) =>
      Object.values(type.getFields())
        .filter((field) => isList(field.type))
        .map((field) => `${type.name}.${field.name}`),
    )
    .sort();
}

/** The name of the type a field's list holds. */
function itemTypeOf(field: string): string {
  const [type, name] = field.split(".");
  const object = schema.getType(type!);
  if (!isObjectType(object)) throw new Error(`${type} is not an object type`);
  return getNamedType(object.getFields()[name!]!.type).name;
}

/** The fields a document selects, as Type.field. */
function selectedFields(document: string): Set<string> {
  const selected = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  visit(
    parse(document),
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const parent = typeInfo.getParentType();
        if (parent) selected.add(`${parent.name}.${node.name.value}`);
      },
    }),
  );
  return selected;
}

/** Every field of the schema whose type is a connection, as Type.field. */
function connectionFields(): string[] {
  return Object.values(schema.getTypeMap())
    .filter(isObjectType)
    .filter((type) => !type.name.startsWith("__"))
    .flatMap((type) =>
      Object.values(type.getFields())
        .filter((field) => getNamedType(field.type).name.endsWith("Connection"))
        .map((field) => `${type.name}.${field.name}`),
    )
    .sort();
}

describe.each(backends)("paged reads on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  let historyWorkspaceId = "";
  let richRunId = "";
  let richVersionId = "";

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-paged-")) },
    });
    // More of everything than a page holds.
    const workspace = await createWorkspace(t.client);
    const schedules = [];
    for (const question of ["Hourly A", "Hourly B", "Hourly C"]) {
      const created = await t.client.request(CreateScheduleDocument, { input: { workspaceId: workspace.id, question, intervalSeconds: 3600 } });
      schedules.push(expectType(created.createSchedule, "CreateScheduleSuccess").schedule.id);
    }
    // Fires recorded as a scheduler records a skipped one (no run to disturb the other lists).
    for (let fire = 0; fire < 3; fire++) {
      await t.app.db.prisma.scheduleFire.create({
        data: { scheduleId: dbIdOf(schedules[0]!), fireTime: new Date(Date.UTC(2026, 0, 1, fire)), status: "SKIPPED", reason: "paged" },
      });
    }
    historyWorkspaceId = workspace.id;
    for (let version = 1; version <= 4; version += 1) {
      expectType(
        (await t.client.request(UpdateGoalDocument, { input: { workspaceId: workspace.id, expectedVersion: version, statement: `Goal ${version + 1}` } }))
          .updateGoal,
        "UpdateGoalSuccess",
      );
    }
    await createWorkspace(t.client, "A second goal");
    await createWorkspace(t.client, "A third goal");
    const first = await admit(t.client, { question: "One", workspaceId: workspace.id });
    await settled(t.client, first.run.id);
    for (const question of ["Two", "Three"]) {
      const next = await admit(t.client, { question, conversationId: first.run.conversation.id, workspaceId: workspace.id });
      await settled(t.client, next.run.id);
    }
    await admit(t.client, { question: "Elsewhere" }).then(({ run }) => settled(t.client, run.id));
    const published = await publish(t.client, { title: "Report", content: "v1" });
    for (const content of ["v2", "v3"]) await publish(t.client, { publicationId: published.version.publication.id, content });
    for (const target of [published.version.publication.id]) {
      expectType(
        (await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: target } })).linkToWorkspace,
        "LinkToWorkspaceSuccess",
      );
    }
    for (const name of ["a", "b"]) await t.client.request(CreateApiKeyDocument, { input: { name } });

    // A run given materials in the workspace, and of every list of a run more than a page: the
    // ledger, proposals, refusals and spills are written as the runtime and the link service would.
    const prisma = t.app.db.prisma;
    const runAdmitted = await t.client.request(AdmitRunDocument, {
      input: {
        question: "With materials",
        workspaceId: workspace.id,
        conversationId: first.run.conversation.id,
        materials: [{ publicationId: published.version.publication.id, version: 1 }],
      },
    });
    const rich = expectType(runAdmitted.admitRun, "AdmitRunSuccess").run;
    await settled(t.client, rich.id);
    richRunId = rich.id;
    const runId = dbIdOf(rich.id);
    const [workspaceDbId, versionDbId] = [dbIdOf(workspace.id), dbIdOf(published.version.id)];
    richVersionId = published.version.id;
    const v1 = await prisma.publicationVersion.findUniqueOrThrow({ where: { id: versionDbId }, include: { publication: true } });
    const ownerId = v1.publication.ownerId;
    for (let i = 0; i < 3; i += 1) {
      await prisma.materialUse.create({ data: { runId, publicationId: v1.publicationId, version: 10 + i, publicationVersionId: v1.id, stage: "CONSUMED" } });
      await prisma.checkpointProposal.create({ data: { runId, workspaceId: workspaceDbId, expectedRevision: 0, proposal: {} } });
      await prisma.linkRefusal.create({
        data: { workspaceId: workspaceDbId, targetKind: "PUBLICATION", targetId: `p${i}`, runId, reason: "WORKSPACE_ARCHIVED" },
      });
      const message = await prisma.message.create({
        data: { conversationId: dbIdOf(rich.conversation.id), seq: 1000 + i, role: "TOOL", content: "big", runId },
      });
      await prisma.spill.create({
        data: {
          handle: `spill://x/${i}`,
          runId,
          conversationId: dbIdOf(rich.conversation.id),
          messageId: message.id,
          toolCallId: `c${i}`,
          toolName: "t",
          sizeBytes: 3,
          sizeChars: 3,
          preview: "b",
          strategy: "head",
        },
      });
      await prisma.mcpServer.create({ data: { ownerId, name: `server-${i}`, transport: "HTTP", url: "https://mcp.example.com/", enabled: false } });
    }
    const rootSpan = await prisma.span.findFirstOrThrow({ where: { traceId: runId }, orderBy: [{ startedAt: "asc" }, { id: "asc" }] });
    const config = await prisma.scoreConfig.create({ data: { ownerId, name: "verdict", kind: "CATEGORICAL", categories: ["right", "wrong"] } });
    for (let i = 0; i < 3; i += 1) {
      for (const [targetKind, targetId] of [
        ["RUN", runId],
        ["PUBLICATION_VERSION", v1.id],
        ["SPAN", rootSpan.id],
      ] as const) {
        await prisma.score.create({ data: { ownerId, configId: config.id, targetKind, targetId, label: "right", source: "HUMAN", createdById: ownerId } });
      }
      await prisma.scoreConfig.create({ data: { ownerId, name: `config-${i}`, kind: "BOOLEAN" } });
    }
    for (let i = 0; i < 3; i += 1) {
      await prisma.spanEvent.create({ data: { spanId: rootSpan.id, seq: 1000 + i, kind: "THINKING", payload: "…", payloadSize: 3, at: new Date() } });
    }
    // Checkpoint revisions resting on the versions published so far.
    const versionIds = (await prisma.publicationVersion.findMany({ select: { id: true } })).map((v) => v.id);
    for (let revision = 0; revision < 3; revision += 1) {
      await t.app.services.checkpoints.apply(
        { principalId: ownerId },
        workspaceDbId,
        revision,
        { summary: `s${revision}`, questions: [{ text: `q${revision}` }], nextSteps: ["a", "b"] },
        {
          origin: "MODEL_SUGGESTION",
          originRunId: runId,
          acceptedVersionIds: versionIds,
          citedVersionIds: versionIds,
          sourceVersionIds: versionIds,
        },
      );
    }
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("the document pages every connection field and reads every plain list of the schema", () => {
    const selected = selectedFields(EVERY_LIST);
    // A field named here but missing from the document would be an unchecked list.
    expect(connectionFields().filter((field) => !selected.has(field))).toEqual([]);
    const lists = listFields();
    expect(lists.filter((field) => !selected.has(field) && !(field in NOT_READ_BY_THEIR_OWN_QUERY))).toEqual([]);
    // The exceptions are plain lists of the schema, and none holds rows of a table (a Prisma model).
    const models = new Set(Object.keys(getDatamodel().datamodel.models));
    for (const field of Object.keys(NOT_READ_BY_THEIR_OWN_QUERY)) {
      expect(lists, field).toContain(field);
      expect(models.has(itemTypeOf(field)), field).toBe(false);
    }
  });

  it("reads every page and every plain list with LIMIT in SQL, the current goal in the workspace's statement and the workspaces' pages of links in one", async () => {
    statements.length = 0;
    const result = await graphql(t, EVERY_LIST, { workspace: historyWorkspaceId, run: richRunId, version: richVersionId });
    expect(result.errors).toBeUndefined();
    const reads = statements.filter((sql) => /^\s*SELECT/i.test(sql));
    // A page of links is read by the database's workspace_link_page, which walks the page's index
    // for its `take` rows (test/db/link-page-plans): one statement for the workspaces of the page.
    const linkPages = reads.filter((sql) => /FROM "public"\."workspace_link_page"\(/.test(sql));
    expect(linkPages).toHaveLength(1);
    const unlimited = reads.filter((sql) => /FROM "public"\."\w+"/.test(sql) && !linkPages.includes(sql) && !limitedThroughout(sql));
    expect(unlimited).toEqual([]);
    // The history catalog and the search find the publications a workspace's links reach in SQL
    // of their own (the search's begins WITH): each such list has its LIMIT.
    const historyReads = statements.filter((sql) => /\bpublication p\b/.test(sql) && /\bworkspace_link l\b/.test(sql));
    expect(historyReads.some((sql) => sql.includes("websearch_to_tsquery"))).toBe(true);
    expect(historyReads.length).toBeGreaterThanOrEqual(2);
    expect(historyReads.filter((sql) => !/ORDER BY [^)]*\bLIMIT \$\d+/.test(sql))).toEqual([]);
    // Every table behind a list was read (so the check above saw its statements).
    const read = new Set(
      reads.flatMap((sql) => [...sql.matchAll(/FROM "public"\."(\w+)"/g)].map((match) => match[1]!.replace(/^workspace_link_page$/, "workspace_link"))),
    );
    expect([...LIST_TABLES].filter((table) => !read.has(table))).toEqual([]);
    // A workspace's goal comes in the workspaces' statement: goal_version is read on its own only
    // for the goalVersions pages (one a workspace); no page of links is read but through
    // workspace_link_page (the history catalog looks links up by their targets).
    const mainTable = (sql: string) => /FROM "public"\."(\w+)"/.exec(sql)?.[1];
    expect(reads.filter((sql) => mainTable(sql) === "workspace_link" && /ORDER BY "t0"\."created_at" DESC/.test(sql))).toEqual([]);
    expect(reads.filter((sql) => mainTable(sql) === "goal_version")).toHaveLength(2);
    // A count is read only when selected: this document selects none. (A run's score summary
    // counts per config and a catalog version's human scores are counted with them: those counts
    // are the fields' own values, grouped or windowed, never a connection's count.)
    expect(reads.filter((sql) => /\bCOUNT\(/i.test(sql) && !/GROUP BY|COUNT\(\*\) OVER/.test(sql))).toEqual([]);
    // Every list was actually read (with more rows than a page).
    type Page = { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean } };
    const data = result.data as {
      workspaces: { edges: { node: { goal: { version: number }; goalVersions: { pageInfo: { hasNextPage: boolean } } } }[] };
      conversations: { edges: { node: { messages: { pageInfo: { hasNextPage: boolean } }; runs: { pageInfo: { hasNextPage: boolean } } } }[] };
      mcpServers: Page;
      run: Record<string, Page> & { trace: { spans: { edges: { node: { id: string; events: Page } }[]; pageInfo: { hasNextPage: boolean } } } };
      workspace: { checkpoint: Record<string, Page> & { summaryProvenance: { sources: Page } }; checkpointVersions: unknown[] };
    };
    expect(data.workspaces.edges.map((edge) => edge.node.goal.version).sort()).toEqual([1, 1]);
    expect(data.conversations.edges.some((edge) => edge.node.messages.pageInfo.hasNextPage && edge.node.runs.pageInfo.hasNextPage)).toBe(true);
    for (const list of ["materialUses", "checkpointProposals", "linkRefusals", "spills"]) {
      expect(data.run[list]!.edges, list).toHaveLength(2);
      expect(data.run[list]!.pageInfo.hasNextPage, list).toBe(true);
    }
    expect(data.mcpServers).toMatchObject({ edges: [expect.anything(), expect.anything()], pageInfo: { hasNextPage: true } });
    expect(data.run.trace.spans.edges).toHaveLength(2);
    expect(data.run.trace.spans.edges.some((edge) => edge.node.events.edges.length === 2 && edge.node.events.pageInfo.hasNextPage)).toBe(true);
    for (const list of ["acceptedPublicationVersions", "sourceDependencies"]) {
      expect(data.workspace.checkpoint[list]!.edges, list).toHaveLength(2);
      expect(data.workspace.checkpoint[list]!.pageInfo.hasNextPage, list).toBe(true);
    }
    expect(data.workspace.checkpoint.summaryProvenance.sources.edges).toHaveLength(2);
    expect((data.workspace.checkpoint.citedMaterials as unknown as unknown[]).length).toBeGreaterThan(2);
    expect(data.workspace.checkpointVersions).toHaveLength(2);
    const { searchHistory } = result.data as { searchHistory: { hits: unknown[]; complete: boolean } };
    expect(searchHistory).toMatchObject({ complete: false, hits: [expect.anything(), expect.anything()] });
  });

  it("counts every connection when asked, each in one statement bounded by a LIMIT, and exactly below the bound", async () => {
    // Every connection field of the document selects its count.
    const counted = (EVERY_COUNT.match(/totalCount countCapped/g) ?? []).length;
    expect(counted).toBe((EVERY_LIST.match(/pageInfo \{ hasNextPage/g) ?? []).length);
    statements.length = 0;
    const result = await graphql(t, EVERY_COUNT, { workspace: historyWorkspaceId, run: richRunId, version: richVersionId });
    expect(result.errors).toBeUndefined();
    const counts = statements.filter((sql) => /^\s*SELECT\s+COUNT\(/i.test(sql));
    expect(counts.length).toBeGreaterThan(0);
    expect(counts.filter((sql) => !/\bLIMIT \$\d+/.test(sql))).toEqual([]);
    type Counted = { totalCount: number; countCapped: boolean };
    const data = result.data as { mcpServers: Counted; run: Record<string, Counted>; workspace: { checkpoint: Record<string, Counted> } };
    for (const list of ["checkpointProposals", "linkRefusals", "spills"]) expect(data.run[list], list).toMatchObject({ totalCount: 3, countCapped: false });
    expect(data.mcpServers).toMatchObject({ totalCount: 3, countCapped: false });
    const versions = await t.app.db.prisma.publicationVersion.count();
    expect(data.workspace.checkpoint.sourceDependencies).toMatchObject({ totalCount: versions, countCapped: false });
  });

  it(`stops counting at ${COUNT_BOUND} and says so with countCapped`, async () => {
    const { run } = await admit(t.client, { question: "Many refusals" });
    const runId = dbIdOf(run.id);
    const workspaceId = dbIdOf(historyWorkspaceId);
    const refusals = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        workspaceId,
        targetKind: "PUBLICATION" as const,
        targetId: `q${from + i}`,
        runId,
        reason: "WORKSPACE_ARCHIVED" as const,
      }));
    await t.app.db.prisma.linkRefusal.createMany({ data: refusals(0, COUNT_BOUND) });
    const countOf = async () =>
      (
        (await graphql(t, `query ($id: ID!) { node(id: $id) { ... on Run { linkRefusals { totalCount countCapped } } } }`, { id: run.id })).data as {
          node: { linkRefusals: Counted };
        }
      ).node.linkRefusals;
    type Counted = { totalCount: number; countCapped: boolean };
    expect(await countOf()).toEqual({ totalCount: COUNT_BOUND, countCapped: false });
    await t.app.db.prisma.linkRefusal.createMany({ data: refusals(COUNT_BOUND, 5) });
    statements.length = 0;
    expect(await countOf()).toEqual({ totalCount: COUNT_BOUND, countCapped: true });
    // One bounded count statement, however many rows there are.
    expect(statements.filter((sql) => /^\s*SELECT\s+COUNT\(.*"link_refusal"/is.test(sql))).toEqual([expect.stringMatching(/LIMIT \$\d+/)]);
  }, 60_000);

  it("bounds a run's materials and a version's sources by what admission and publishing accept", async () => {
    const published = await publish(t.client, { title: "Material", content: "m" });
    const ref = { publicationId: published.version.publication.id, version: 1 };
    const refused = await t.client.request(AdmitRunDocument, {
      input: { question: "Too many", materials: Array.from({ length: RUN_MATERIALS_MAX + 1 }, () => ref) },
    });
    expect(expectType(refused.admitRun, "ValidationError").issues).toEqual([{ field: "materials", message: `at most ${RUN_MATERIALS_MAX} materials` }]);
    const sources = await t.client.request(PublishVersionDocument, {
      input: { title: "Built on", content: "s", sources: Array.from({ length: PUBLICATION_SOURCES_MAX + 1 }, () => ref) },
    });
    expect(expectType(sources.publishVersion, "ValidationError").issues).toEqual([{ field: "sources", message: `at most ${PUBLICATION_SOURCES_MAX} sources` }]);
  });

  it("pages goal versions newest first, the cursor continuing where the page ended", async () => {
    const pages: number[][] = [];
    let after: string | null = null;
    do {
      const result = await graphql(t, HISTORY, { id: historyWorkspaceId, after });
      const history = (
        result.data as { node: { goalVersions: { edges: { node: { version: number } }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } } }
      ).node.goalVersions;
      pages.push(history.edges.map((edge) => edge.node.version));
      after = history.pageInfo.hasNextPage ? history.pageInfo.endCursor : null;
    } while (after);
    expect(pages).toEqual([[5, 4], [3, 2], [1]]);
  });

  it("pages links newest first both ways, links made in the same millisecond included, each exactly once", async () => {
    const workspace = await createWorkspace(t.client, "Many links");
    const id = Buffer.from(workspace.id, "base64").toString().split(":")[1]!;
    const sameInstant = new Date("2026-01-01T00:00:00.000Z");
    await t.app.db.prisma.workspaceLink.createMany({
      data: ["a", "b", "c", "d", "e"].map((name, i) => ({
        workspaceId: id,
        targetKind: "RUN" as const,
        targetId: `run-${name}`,
        createdAt: i < 3 ? sameInstant : new Date(sameInstant.getTime() + i),
      })),
    });
    const expected = (await t.app.db.prisma.workspaceLink.findMany({ where: { workspaceId: id }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] })).map(
      (link) => link.id,
    );
    expect(expected).toHaveLength(5);
    const ids = (edges: { node: { id: string } }[]) => edges.map((edge) => Buffer.from(edge.node.id, "base64").toString().split(":")[1]!);

    const forward: string[][] = [];
    let after: string | null = null;
    do {
      const links: LinksData["workspace"]["links"] = ((await graphql(t, LINKS, { id: workspace.id, first: 2, after })).data as LinksData).workspace.links;
      forward.push(ids(links.edges));
      after = links.pageInfo.hasNextPage ? links.pageInfo.endCursor : null;
    } while (after && forward.length < 10);
    expect(forward).toEqual([expected.slice(0, 2), expected.slice(2, 4), expected.slice(4)]);

    const backward: string[][] = [];
    let before: string | null = null;
    do {
      const links: LinksData["workspace"]["links"] = ((await graphql(t, LINKS, { id: workspace.id, last: 2, before })).data as LinksData).workspace.links;
      backward.unshift(ids(links.edges));
      before = links.pageInfo.hasPreviousPage ? links.pageInfo.startCursor : null;
    } while (before && backward.length < 10);
    expect(backward.flat()).toEqual(expected);

    const bogus = await graphql(t, LINKS, { id: workspace.id, first: 2, after: "bm90IGEgY3Vyc29y" });
    expect(JSON.stringify(bogus.errors)).toContain("after is not a cursor of this list");
  });
});

type LinksData = {
  workspace: {
    links: { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string; endCursor: string } };
  };
};

const LINKS = /* GraphQL */ `
  query Links($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    workspace(id: $id) { links(first: $first, after: $after, last: $last, before: $before) { edges { node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }
  }
`;

const HISTORY = /* GraphQL */ `
  query History($id: ID!, $after: String) {
    node(id: $id) { ... on Workspace { goalVersions(first: 2, after: $after) { edges { node { version } } pageInfo { hasNextPage endCursor } } } }
  }
`;

async function graphql(t: TestApp, query: string, variables: Record<string, unknown> = {}): Promise<{ data?: unknown; errors?: unknown }> {
  const response = await t.app.yoga.fetch(
    new Request("http://dossier.test/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    }),
  );
  return (await response.json()) as { data?: unknown; errors?: unknown };
}

/** Tables whose rows the API serves in lists; the document reads each of them. */
const LIST_TABLES = [
  "workspace",
  "goal_version",
  "workspace_link",
  "conversation",
  "message",
  "run",
  "publication",
  "publication_version",
  "artifact",
  "api_key",
  "span",
  "span_event",
  "run_attempt",
  "run_material",
  "material_use",
  "spill",
  "checkpoint_proposal",
  "checkpoint_version",
  "link_refusal",
  "mcp_server",
  "skill",
  "publication_source",
  "agent_profile",
  "tool_approval",
  "score",
  "score_config",
];

const dbIdOf = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").split(":").slice(1).join(":");

/** Unique keys other than `id` that Prisma reads an object by: a run's trace by its run. */
const UNIQUE_KEYS: Record<string, string> = { trace: "run_id" };

/** The statement without the relations it reads in lateral joins: its own table, condition and LIMIT. */
function outerOf(sql: string): string {
  const from = /FROM "public"\."\w+"(?: AS "\w+")?/.exec(sql);
  if (!from || !sql.includes("LEFT JOIN LATERAL")) return sql;
  const rest = sql.slice(sql.lastIndexOf(" ON true") + " ON true".length);
  return `${sql.slice(0, from.index + from[0].length)}${rest}`;
}

/**
 * A read of rows by a unique key only — `key IN (…)` or `key = $n`, possibly narrowed further by
 * AND — as Prisma loads the one object a field of each listed item points to: at most as many
 * rows as the page it belongs to.
 */
function rowsByKey(sql: string): boolean {
  const where = /FROM "public"\."(\w+)"(?: AS "(\w+)")? WHERE (.*?)(?: ORDER BY .*?)?(?: OFFSET \$\d+)?$/.exec(outerOf(sql));
  if (!where) return false;
  const [, table, alias, condition] = where;
  const column = `"${UNIQUE_KEYS[table!] ?? "id"}"`;
  const key = alias ? `"${alias}"\\.${column}` : `"public"\\."${table}"\\.${column}`;
  return new RegExp(`^\\(?${key} (?:IN \\((?:NULL|\\$\\d+(?:,\\$\\d+)*)\\)|= \\$\\d+)(?:\\)| AND |$)`).test(condition!);
}

/**
 * A LIMIT on every relation the statement reads in a lateral join (Prisma gives each exactly one,
 * nested ones before their parent's), and on the statement itself unless it reads rows by key.
 */
function limitedThroughout(sql: string): boolean {
  const laterals = (sql.match(/LEFT JOIN LATERAL/g) ?? []).length;
  const limits = (sql.match(/\bLIMIT\b/gi) ?? []).length;
  const outerLimited = /\bLIMIT\b/i.test(outerOf(sql));
  return limits === laterals + (outerLimited ? 1 : 0) && (outerLimited || rowsByKey(sql));
}
