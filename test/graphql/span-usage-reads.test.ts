// A trace page's usage and cost sums cost one statement however many spans ask for them: a page
// of 50 spans each selecting cumulativeUsage and cumulativeCost runs as many statements as a page
// of 5, and every sum equals the one added up by hand from the spans as they were written.
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunsCountDocument } from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { Decimal } from "../../src/domain/costs/pricing.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const TRACE_PAGE = parse(/* GraphQL */ `
  query ($id: ID!, $first: Int!) {
    node(id: $id) {
      ... on Trace {
        usage { input output cached reasoning }
        cost { amount }
        spans(first: $first) {
          edges { node { id cumulativeUsage { input output cached reasoning } cumulativeCost { amount } } }
        }
      }
    }
  }
`);

type Usage = { input: number; output: number; cached: number; reasoning: number };
type Seeded = { id: string; parentId: string | null; kind: string; usage: Usage | null; cost: string | null; unpriced: boolean };

/** A run's spans: its RUN span, and per turn a TURN with a model call and a tool call that made a model call of its own. */
function spansOf(traceId: string, turns: number): Seeded[] {
  const root: Seeded = { id: `${traceId}-run`, parentId: null, kind: "RUN", usage: null, cost: null, unpriced: false };
  const spans = [root];
  for (let i = 1; i <= turns; i += 1) {
    const turn = `${traceId}-turn${i}`;
    const tool = `${traceId}-tool${i}`;
    spans.push(
      { id: turn, parentId: root.id, kind: "TURN", usage: null, cost: null, unpriced: false },
      {
        id: `${traceId}-model${i}`,
        parentId: turn,
        kind: "MODEL_CALL",
        usage: { input: 100 * i, output: 7 * i, cached: i % 3, reasoning: 2 * i },
        cost: `0.00${i}5`,
        unpriced: false,
      },
      { id: tool, parentId: turn, kind: "TOOL_CALL", usage: null, cost: null, unpriced: false },
      {
        id: `${traceId}-sub${i}`,
        parentId: tool,
        kind: "MODEL_CALL",
        usage: { input: 11, output: i, cached: 0, reasoning: 0 },
        cost: null,
        unpriced: i % 4 === 0,
      },
    );
  }
  return spans;
}

/** The sums of a span and its descendants, walked in memory from the seeded rows. */
function byHand(spans: Seeded[], id: string): { usage: Usage; cost: string } {
  const usage = { input: 0, output: 0, cached: 0, reasoning: 0 };
  let cost = new Decimal(0);
  const visit = (spanId: string) => {
    const span = spans.find((s) => s.id === spanId)!;
    for (const key of ["input", "output", "cached", "reasoning"] as const) usage[key] += span.usage?.[key] ?? 0;
    if (span.cost) cost = cost.plus(span.cost);
    for (const child of spans.filter((s) => s.parentId === spanId)) visit(child.id);
  };
  visit(id);
  return { usage, cost: cost.toFixed() };
}

describe.each(backends)("usage and cost sums of a trace page on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
    await t.client.request(RunsCountDocument, {});
  });
  afterAll(() => t?.close());

  async function seedTrace(traceId: string, turns: number): Promise<Seeded[]> {
    const prisma = t.app.db.prisma;
    const spans = spansOf(traceId, turns);
    await prisma.$executeRawUnsafe(`INSERT INTO conversation (id, owner_id, title) VALUES ($1, 'development', 'c')`, traceId);
    await prisma.$executeRawUnsafe(
      `INSERT INTO run (id, owner_id, conversation_id, agent, question, status, max_turns, token_budget, deadline_seconds, deadline_at, configuration, cost)
       VALUES ($1, 'development', $1, 'researcher', 'q', 'SUCCEEDED', 20, 1000, 60, now(), '{}', $2::numeric)`,
      traceId,
      byHand(spans, spans[0]!.id).cost,
    );
    await prisma.$executeRawUnsafe(`INSERT INTO trace (id, run_id) VALUES ($1, $1)`, traceId);
    for (const [i, span] of spans.entries()) {
      await prisma.$executeRawUnsafe(
        `INSERT INTO span (id, trace_id, parent_id, kind, name, status, usage, cost, cost_unpriced, started_at)
         VALUES ($1, $2, $3, $4::"SpanKind", $4, 'OK', $5::jsonb, $6::numeric, $7, now() + $8 * interval '1 millisecond')`,
        span.id,
        traceId,
        span.parentId,
        span.kind,
        span.usage ? JSON.stringify(span.usage) : null,
        span.cost,
        span.unpriced,
        i,
      );
    }
    return spans;
  }

  type Page = {
    node: {
      usage: Usage;
      cost: { amount: string };
      spans: { edges: { node: { id: string; cumulativeUsage: Usage; cumulativeCost: { amount: string } } }[] };
    };
  };

  const pageOf = async (traceId: string, first: number) => {
    statements.length = 0;
    const page = (await t.client.request(TRACE_PAGE as never, { id: encodeGlobalId("Trace", traceId), first } as never)) as Page;
    return { page, count: statements.filter((sql) => !/^\s*(BEGIN|COMMIT|SELECT 1)\b/i.test(sql)).length };
  };

  it("sums 5 spans and 50 spans with the same statements, each sum equal to the spans' own values added by hand", async () => {
    const small = await seedTrace(`small-${backend}`, 1); // 5 spans: the run, a turn, its model call, its tool call and that one's model call
    const large = await seedTrace(`large-${backend}`, 13); // 53 spans: a page of 50 leaves some out
    const five = await pageOf(`small-${backend}`, 5);
    const fifty = await pageOf(`large-${backend}`, 50);

    expect(five.page.node.spans.edges).toHaveLength(5);
    expect(fifty.page.node.spans.edges).toHaveLength(50);
    expect(fifty.count).toBe(five.count);
    // One statement answers every span's sums, however many spans ask.
    expect(statements.filter((sql) => /WITH RECURSIVE/i.test(sql))).toHaveLength(1);

    for (const [spans, { page }] of [
      [small, five],
      [large, fifty],
    ] as const) {
      for (const { node } of page.node.spans.edges) {
        const seeded = spans.find((s) => encodeGlobalId("Span", s.id) === node.id)!;
        const expected = byHand(spans, seeded.id);
        expect(node.cumulativeUsage).toEqual(expected.usage);
        expect(new Decimal(node.cumulativeCost.amount).toFixed()).toBe(expected.cost);
      }
      const whole = byHand(spans, spans[0]!.id);
      expect(page.node.usage).toEqual(whole.usage);
      expect(new Decimal(page.node.cost.amount).toFixed()).toBe(whole.cost);
    }
    // By hand, for one turn: 100 + 11 input tokens, 7 + 1 output, the model call's 0.0015 USD.
    expect(five.page.node.usage).toEqual({ input: 111, output: 8, cached: 1, reasoning: 2 });
  });

  it("answers a trace without model calls with zero", async () => {
    const prisma = t.app.db.prisma;
    const id = `empty-${backend}`;
    await prisma.$executeRawUnsafe(`INSERT INTO conversation (id, owner_id, title) VALUES ($1, 'development', 'c')`, id);
    await prisma.$executeRawUnsafe(
      `INSERT INTO run (id, owner_id, conversation_id, agent, question, status, max_turns, token_budget, deadline_seconds, deadline_at, configuration)
       VALUES ($1, 'development', $1, 'researcher', 'q', 'SUCCEEDED', 20, 1000, 60, now(), '{}')`,
      id,
    );
    await prisma.$executeRawUnsafe(`INSERT INTO trace (id, run_id) VALUES ($1, $1)`, id);
    await prisma.$executeRawUnsafe(`INSERT INTO span (id, trace_id, kind, name, status, started_at) VALUES ($1, $1, 'RUN', 'run', 'OK', now())`, id);
    const { page } = await pageOf(id, 5);
    const zero = { input: 0, output: 0, cached: 0, reasoning: 0 };
    expect(page.node.usage).toEqual(zero);
    expect(page.node.spans.edges.map(({ node }) => [node.cumulativeUsage, new Decimal(node.cumulativeCost.amount).toFixed()])).toEqual([[zero, "0"]]);
  });
});
