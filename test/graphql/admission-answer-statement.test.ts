// What answering a plain admission costs the database. When a hundred runs are admitted at once,
// every statement an admission sends is a round trip in the burst that the runs' subscribers wait
// behind. A new run in a new conversation is written by one statement (admit-in-one-statement.ts),
// and that statement also gives back what the SDK's AdmitRun selects on the run — conversation,
// principal, goal version, workspace, materials — so the answer reads nothing more. Every answer
// is the run as a read of it shows it, whichever way it was admitted.
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdmitRunInput, RunDocument } from "../../sdk/generated/graphql.js";
import { directQuery, queryRows, sendingDirect } from "../../src/db/direct-statements.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const WIDER = parse(/* GraphQL */ `
  mutation ($input: AdmitRunInput!) {
    admitRun(input: $input) {
      ... on AdmitRunSuccess {
        run { publicationOutcome agentProfile { name } conversation { title } materials { position } }
      }
    }
  }
`) as never;

/** Each material's version and publication, three relations below the run. */
const DEEP_RUN = /* GraphQL */ `
  fragment Deep on Run { id materials { position publicationVersion { version publication { title latestVersion { version } } } } }
`;
const DEEP_ADMIT = parse(/* GraphQL */ `
  mutation ($input: AdmitRunInput!) { admitRun(input: $input) { ... on AdmitRunSuccess { run { ...Deep } } } }
  ${DEEP_RUN}
`) as never;
const DEEP_NODE = parse(/* GraphQL */ `
  query ($id: ID!) { node(id: $id) { ...Deep } }
  ${DEEP_RUN}
`) as never;

/** Transaction control and the pool's liveness checks: not statements of the admission's own. */
const CONTROL = /^\s*(BEGIN|COMMIT|SELECT 1)\b/i;

describe.each(backends)("answering a plain admission on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
    });
    // The caller's first request creates its principal: not an admission's cost.
    await admit(t.client, { question: "First" });
  });
  afterAll(async () => {
    await t?.close();
  });

  const counted = async <T>(work: () => Promise<T>): Promise<{ result: T; sql: string[] }> => {
    statements.length = 0;
    const result = await work();
    return { result, sql: statements.filter((sql) => !CONTROL.test(sql)) };
  };

  /** The run as `node(id)` reads it, with the same fragment as AdmitRun. */
  const read = async (id: string) => {
    const { __typename: _, ...run } = expectType((await t.client.request(RunDocument, { id })).node!, "Run");
    return run;
  };

  /** Two publications, given in reverse order and one twice. */
  const materials = async () => {
    const a = await publish(t.client, { title: "Source A", content: "a" });
    const b = await publish(t.client, { title: "Source B", content: "b" });
    return [b, a, b].map((p) => ({ publicationId: p.version.publication.id, version: 1 }));
  };

  it("answers with the SDK's AdmitRun selection from the admission's one statement", async () => {
    const input: AdmitRunInput = {
      question: "Which sources agree?",
      tags: ["triage"],
      metadata: { ticket: "T-1" },
      limits: { maxCost: "2.50" },
      idempotencyKey: "plain-answer",
    };
    const { result, sql } = await counted(() => admit(t.client, input));
    expect(sql).toHaveLength(1);
    expect(sql[0]).toMatch(/^\s*WITH ws AS/);
    expect(result).toMatchObject({ replayed: false, run: { conversation: { title: "Which sources agree?" }, admittedBy: { id: expect.any(String) } } });
    expect(result.run).toEqual(await read(result.run.id));
  });

  it("answers an admission in a workspace from its one statement too", async () => {
    const workspace = await createWorkspace(t.client);
    const { result, sql } = await counted(() => admit(t.client, { workspaceId: workspace.id, question: "In the workspace", materials: [] }));
    expect(sql).toHaveLength(1);
    expect(result.run.workspace?.id).toBe(workspace.id);
    expect(result.run.goalVersion?.version).toBe(1);
    expect(result.run).toEqual(await read(result.run.id));
    // A selection without the workspace does not have the statement give it back.
    const { sql: unselected } = await counted(() => t.client.request(DEEP_ADMIT, { input: { workspaceId: workspace.id, question: "No workspace read" } }));
    expect(unselected[0]).toMatch(/^\s*WITH ws AS/);
    expect(unselected[0]).not.toContain(`"w.id"`);
  });

  it("gives back the run as a read of it gives it, money as Decimals, and prepares its statement once per connection", async () => {
    const prisma = t.app.db.prisma;
    const principal = await prisma.principal.update({ where: { id: (await prisma.principal.findFirstOrThrow()).id }, data: { dailyCostLimit: "7.25" } });
    const actor = { principalId: principal.id };
    const workspace = await createWorkspace(t.client);
    const workspaceId = idOfType(workspace.id, "Workspace")!;
    await prisma.workspace.update({ where: { id: workspaceId }, data: { monthlyBudget: "120.5" } });
    const relations = { conversation: true, owner: true, goalVersion: true, materials: true, liveWorkspace: true };
    const limits = { maxTurns: 3, maxCost: "2.5", confirmCostAbove: "0.125" };
    const { run } = await t.app.services.admissions.admitRun(actor, { question: "Priced", workspaceId, limits }, relations);
    const { liveWorkspace, ...admitted } = run as typeof run & { liveWorkspace: unknown; owner: { dailyCostLimit: { toFixed(): string } | null } };
    const include = { conversation: true, owner: true, goalVersion: true, materials: true } as const;
    expect(admitted).toEqual(await prisma.run.findUniqueOrThrow({ where: { id: run.id }, include }));
    expect(liveWorkspace).toEqual(await prisma.workspace.findUniqueOrThrow({ where: { id: workspaceId } }));
    expect([run.maxCost?.toFixed(), admitted.owner.dailyCostLimit?.toFixed()]).toEqual(["2.5", "7.25"]);
    if (backend !== "postgres") return;
    // Sent by name: PostgreSQL plans it on the first calls of each connection, not on every
    // admission (before: never prepared). The check runs on the connection the admission just
    // gave back, unless the worker took that one meanwhile: a few tries.
    let executions = 0;
    for (let i = 0; i < 5 && executions === 0; i += 1) {
      await t.app.services.admissions.admitRun(actor, { question: `Priced ${i}`, workspaceId, limits }, relations);
      const [prepared] = await queryRows<{ executions: number | null }>(
        t.app.db.prisma,
        "SELECT sum(generic_plans + custom_plans)::int AS executions FROM pg_prepared_statements WHERE statement LIKE '%WITH ws AS%' AND statement NOT LIKE '%pg_prepared_statements%'",
      );
      executions = prepared?.executions ?? 0;
    }
    expect(executions).toBeGreaterThan(0);
  });

  it("gives back the materials in order with the run, without reading the run again", async () => {
    const given = await materials();
    const { result, sql } = await counted(() => admit(t.client, { question: "With materials", materials: given }));
    expect(sql[0]).toMatch(/^\s*WITH ws AS/);
    // Each material's publication version is still read on its own, as when the run is read (node).
    expect(sql.filter((statement) => /FROM "public"\."run" /.test(statement))).toEqual([]);
    expect(result.run.materials.map((m) => m.position)).toEqual([0, 1]);
    expect(result.run).toEqual(await read(result.run.id));
  });

  it("gives back one row for the admission however many materials it has, without their publications' contents", async () => {
    const body = "The body of a long source, which the admission's answer never carries.";
    const versions = await Promise.all(["X", "Y", "Z"].map((title) => publish(t.client, { title: `Source ${title}`, content: `${body} ${title}` })));
    const prisma = t.app.db.prisma;
    // The admission's statement goes straight to the driver (direct-statements.ts): its rows are heard there.
    const direct = directQuery(prisma)!;
    const returned: unknown[][] = [];
    sendingDirect(prisma, async (sql, params) => {
      const rows = await direct(sql, params);
      if (/^\s*WITH ws AS/.test(sql)) returned.push(rows);
      return rows;
    });
    try {
      const given = versions.map((v) => ({ publicationId: v.version.publication.id, version: 1 }));
      const { result } = await counted(() => admit(t.client, { question: "Three sources", materials: given }));
      expect(result.run.materials.map((m) => m.position)).toEqual([0, 1, 2]);
      expect(result.run).toEqual(await read(result.run.id));
    } finally {
      sendingDirect(prisma, direct);
    }
    expect(returned).toHaveLength(1);
    expect(returned[0]).toHaveLength(1);
    expect(JSON.stringify(returned[0])).not.toContain(body);
  });

  it("reads the run again when the selection goes deeper than the admission gives back, and answers as a read does", async () => {
    const given = await materials();
    const { result, sql } = await counted(() => t.client.request(DEEP_ADMIT, { input: { question: "Deep", materials: given } }));
    const { run } = (result as { admitRun: { run: { id: string } } }).admitRun;
    expect(sql[0]).toMatch(/^\s*WITH ws AS/);
    expect(sql.filter((statement) => /FROM "public"\."run" /.test(statement))).toHaveLength(1);
    expect(run).toMatchObject({ materials: [{ publicationVersion: { publication: { title: "Source B", latestVersion: { version: 1 } } } }, {}] });
    expect(run).toEqual(((await t.client.request(DEEP_NODE, { id: run.id })) as { node: unknown }).node);
  });

  it("answers a replay with the run read once, with what the selection reads, and any other admission as a read does", async () => {
    const input: AdmitRunInput = { question: "Once", tags: ["retried"], idempotencyKey: "replayed-answer" };
    const first = await admit(t.client, input);
    // The admission's statement finds the key taken and writes nothing; then the key, then the run.
    const { result: again, sql } = await counted(() => admit(t.client, input));
    expect(sql).toHaveLength(3);
    expect(sql[1]).toMatch(/FROM "public"\."idempotency_key"/);
    expect(sql[2]).toMatch(/FROM "public"\."run"/);
    expect(again).toEqual({ ...first, replayed: true });
    expect(again.run).toEqual(await read(first.run.id));

    const conversation = await startConversation(t.client, "Battery chat");
    const inConversation = await admit(t.client, { conversationId: conversation.id, question: "In a conversation", materials: await materials() });
    expect(inConversation.run.conversation.id).toBe(conversation.id);
    expect(inConversation.run).toEqual(await read(inConversation.run.id));

    // Fields the statement does not give back are read as for any run.
    const wider = (await t.client.request(WIDER, { input: { question: "Wider", materials: (await materials()).slice(0, 1) } })) as {
      admitRun: { run: { publicationOutcome: null; agentProfile: { name: string } | null; conversation: { title: string }; materials: unknown[] } };
    };
    expect(wider.admitRun.run).toEqual({
      publicationOutcome: null,
      agentProfile: { name: "researcher" },
      conversation: { title: "Wider" },
      materials: [{ position: 0 }],
    });
  });
});
