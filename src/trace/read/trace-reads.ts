// Reads of a recorded trace that the API answers with (T1, T4): the first events of many spans
// in one statement, the usage and cost sums of spans and traces, and a model call's request as it was sent.
import { type Decimal, toDecimal } from "../../domain/costs/pricing.js";
import { fromStoredJson } from "../../domain/text/stored-text.js";
import type { PrismaClient, SpanEvent } from "../../generated/prisma/client.js";
import { type LogLookup, recordedRequestOf, resolveRequest } from "../../domain/trace/recorded-request.js";
import type { JsonValue } from "../../domain/json-columns.js";

/** Model-reported tokens, as a span records them. */
export type Usage = { input: number; output: number; cached: number; reasoning: number };

/** The usage of nothing: no span, or spans that made no model request. */
export const noUsage = (): Usage => ({ input: 0, output: 0, cached: 0, reasoning: 0 });

/** The columns a listed event shows (its payload is read only when asked for). */
export type ListedEvent = Pick<SpanEvent, "id" | "spanId" | "seq" | "kind" | "at" | "payloadSize" | "preview">;

/**
 * The first `take` events (by seq, then id) of each of `spanIds`, by span: one statement with a
 * LIMIT per span, rather than a statement per span.
 */
export async function firstEventsOfSpans(prisma: PrismaClient, spanIds: readonly string[], take: number): Promise<Map<string, ListedEvent[]>> {
  const rows = await prisma.$queryRaw<ListedEvent[]>`
    SELECT e.id, e.span_id AS "spanId", e.seq, e.kind::text AS kind, e.at, e.payload_size AS "payloadSize", e.preview
      FROM unnest(${spanIds}::text[]) AS listed(id)
      CROSS JOIN LATERAL (
        SELECT * FROM "public"."span_event" WHERE span_id = listed.id ORDER BY seq, id LIMIT ${take}
      ) e
     ORDER BY e.span_id, e.seq, e.id`;
  const bySpan = new Map<string, ListedEvent[]>();
  for (const row of rows) {
    const listed = bySpan.get(row.spanId);
    if (listed) listed.push(row);
    else bySpan.set(row.spanId, [row]);
  }
  return bySpan;
}

/** What a span and every span below it add up to, each counted once. */
export type SubtreeSums = { usage: Usage; cost: Decimal; unpriced: boolean };

type WalkedRow = { root: string; input: string; output: string; cached: string; reasoning: string; cost: string; unpriced: boolean; nested: string[] };

/**
 * The usage and cost of each of `spanIds` with every span below it, in one statement that reads
 * each span under them once: the walk down from a listed span stops at another listed span, whose
 * own sums are then added to it (a trace page listing a run's root and its turns reads the tree
 * once, not once per listed span). Spans outside the listed subtrees are never read.
 */
export async function subtreeSums(prisma: PrismaClient, spanIds: readonly string[]): Promise<Map<string, SubtreeSums>> {
  const rows = await prisma.$queryRaw<WalkedRow[]>`
    WITH RECURSIVE walk(root, id, nested, usage, cost, cost_unpriced) AS (
      SELECT s.id, s.id, false, s.usage, s.cost, s.cost_unpriced FROM "public"."span" s WHERE s.id = ANY(${spanIds}::text[])
      UNION ALL
      SELECT w.root, c.id, c.id = ANY(${spanIds}::text[]), c.usage, c.cost, c.cost_unpriced
        FROM walk w JOIN "public"."span" c ON c.parent_id = w.id
       WHERE NOT w.nested
    )
    SELECT root,
           coalesce(sum((usage->>'input')::numeric) FILTER (WHERE NOT nested), 0)::text AS input,
           coalesce(sum((usage->>'output')::numeric) FILTER (WHERE NOT nested), 0)::text AS output,
           coalesce(sum((usage->>'cached')::numeric) FILTER (WHERE NOT nested), 0)::text AS cached,
           coalesce(sum((usage->>'reasoning')::numeric) FILTER (WHERE NOT nested), 0)::text AS reasoning,
           coalesce(sum(cost) FILTER (WHERE NOT nested), 0)::text AS cost,
           coalesce(bool_or(cost_unpriced) FILTER (WHERE NOT nested), false) AS unpriced,
           coalesce(array_agg(id) FILTER (WHERE nested), '{}') AS nested
      FROM walk GROUP BY root`;
  const own = new Map(rows.map((row) => [row.root, row]));
  const totals = new Map<string, SubtreeSums>();
  const totalOf = (id: string): SubtreeSums => {
    const known = totals.get(id);
    if (known) return known;
    const row = own.get(id) ?? { input: "0", output: "0", cached: "0", reasoning: "0", cost: "0", unpriced: false, nested: [] };
    let total: SubtreeSums = {
      usage: { input: Number(row.input), output: Number(row.output), cached: Number(row.cached), reasoning: Number(row.reasoning) },
      cost: toDecimal(row.cost),
      unpriced: row.unpriced,
    };
    for (const nested of row.nested) {
      const below = totalOf(nested);
      total = { usage: sumUsage([total.usage, below.usage]), cost: total.cost.plus(below.cost), unpriced: total.unpriced || below.unpriced };
    }
    totals.set(id, total);
    return total;
  };
  for (const id of own.keys()) totalOf(id);
  return totals;
}

/** The sum of the model spans' own usage of each of `traceIds`: one statement that reads only the spans that record usage. */
export async function traceUsages(prisma: PrismaClient, traceIds: readonly string[]): Promise<Map<string, Usage>> {
  const rows = await prisma.$queryRaw<{ traceId: string; input: string; output: string; cached: string; reasoning: string }[]>`
    SELECT trace_id AS "traceId",
           coalesce(sum((usage->>'input')::numeric), 0)::text AS input,
           coalesce(sum((usage->>'output')::numeric), 0)::text AS output,
           coalesce(sum((usage->>'cached')::numeric), 0)::text AS cached,
           coalesce(sum((usage->>'reasoning')::numeric), 0)::text AS reasoning
      FROM "public"."span" WHERE trace_id = ANY(${traceIds}::text[]) AND usage IS NOT NULL
     GROUP BY trace_id`;
  return new Map(
    rows.map((row) => [row.traceId, { input: Number(row.input), output: Number(row.output), cached: Number(row.cached), reasoning: Number(row.reasoning) }]),
  );
}

export const sumUsage = (usages: (Usage | null)[]): Usage =>
  usages.reduce<Usage>(
    (total, usage) => ({
      input: total.input + (usage?.input ?? 0),
      output: total.output + (usage?.output ?? 0),
      cached: total.cached + (usage?.cached ?? 0),
      reasoning: total.reasoning + (usage?.reasoning ?? 0),
    }),
    noUsage(),
  );

/**
 * A model call's request as JSON: the messages sent, with those its span records as references
 * read back from the conversation log through `lookup`. Null for spans that record no request.
 */
export async function requestOf(attributes: JsonValue, lookup: LogLookup): Promise<string | null> {
  const recorded = recordedRequestOf(fromStoredJson(attributes));
  if (!recorded) return null;
  return JSON.stringify(await resolveRequest(lookup, recorded));
}
