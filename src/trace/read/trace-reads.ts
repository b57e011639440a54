// Reads of a recorded trace that the API answers with (T1, T4): the first events of many spans
// in one statement, a trace's span tree for usage sums, and a model call's request as it was sent.
import { Decimal, toDecimal } from "../../domain/costs/pricing.js";
import { fromStoredJson } from "../../domain/text/stored-text.js";
import type { PrismaClient, SpanEvent } from "../../generated/prisma/client.js";
import { type LogLookup, recordedRequestOf, resolveRequest } from "../../domain/trace/recorded-request.js";
import { type JsonValue, usageOf } from "../../domain/json-columns.js";

/** Model-reported tokens, as a span records them. */
export type Usage = { input: number; output: number; cached: number; reasoning: number };

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

export type SpanUsageRow = { id: string; parentId: string | null; usage: JsonValue; cost: { toFixed(): string } | null; costUnpriced: boolean };

/** A trace's spans by parent, with their own usage. */
export async function spanChildren(prisma: PrismaClient, traceId: string): Promise<Map<string, SpanUsageRow[]>> {
  const spans = await prisma.span.findMany({ where: { traceId }, select: { id: true, parentId: true, usage: true, cost: true, costUnpriced: true } });
  const children = new Map<string, SpanUsageRow[]>();
  for (const s of spans) if (s.parentId) children.set(s.parentId, [...(children.get(s.parentId) ?? []), s]);
  return children;
}

/** The usage of a span and every span below it (from `spanChildren`), each counted once. */
export function subtreeUsage(children: Map<string, SpanUsageRow[]>, span: { id: string; usage: JsonValue }): Usage {
  const subtree: (Usage | null)[] = [];
  const visit = (id: string, usage: JsonValue) => {
    subtree.push(usageOf(usage));
    for (const child of children.get(id) ?? []) visit(child.id, child.usage);
  };
  visit(span.id, span.usage);
  return sumUsage(subtree);
}

/** The cost of a span and every span below it (from `spanChildren`), each counted once; `unpriced` when one of them had no price. */
export function subtreeCost(
  children: Map<string, SpanUsageRow[]>,
  span: Pick<SpanUsageRow, "id" | "cost" | "costUnpriced">,
): { amount: Decimal; unpriced: boolean } {
  let amount = new Decimal(0);
  let unpriced = false;
  const visit = (row: Pick<SpanUsageRow, "id" | "cost" | "costUnpriced">) => {
    if (row.cost) amount = amount.plus(toDecimal(row.cost));
    unpriced ||= row.costUnpriced;
    for (const child of children.get(row.id) ?? []) visit(child);
  };
  visit(span);
  return { amount, unpriced };
}

export const sumUsage = (usages: (Usage | null)[]): Usage =>
  usages.reduce<Usage>(
    (total, usage) => ({
      input: total.input + (usage?.input ?? 0),
      output: total.output + (usage?.output ?? 0),
      cached: total.cached + (usage?.cached ?? 0),
      reasoning: total.reasoning + (usage?.reasoning ?? 0),
    }),
    { input: 0, output: 0, cached: 0, reasoning: 0 },
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
