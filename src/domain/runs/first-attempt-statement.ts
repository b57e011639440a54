// A run's first attempt begins in one statement, inside the claim's transaction: the run's trace
// with its RUN and ATTEMPT spans and their two replay-log rows (seq 1 and 2), the attempt's row,
// and the run's question entering its conversation's log — and, for a queued run, the count of
// its principal's other running runs, taken after the claim's lock of that principal (claim.ts).
// The same writes took fourteen round trips one by one (trace upsert, a span's seq, row and log
// row each, the attempt, the question's count, counter and row), each waited for by the run's
// first model request. A run whose trace already exists (resumed from a pause before its first
// attempt's trace, say) writes none of it here: the claim then starts its spans as before.
import type { Prisma } from "../../generated/prisma/client.js";
import { toStored, toStoredJson } from "../text/stored-text.js";
import { newSpanId } from "../trace/span-ids.js";
import { startedChange } from "../trace/span-statements.js";
import type { TraceChange } from "../trace/trace-writes.js";
import type { SpanRef } from "./vocabulary.js";
import { RUNNING_UNDER_LEASE } from "./lease-expired.js";

type Tx = Prisma.TransactionClient;

export type FirstAttempt = {
  run: { id: string; conversationId: string; question: string };
  number: number;
  instance: string;
  rootSpan: { name: string; attributes: Record<string, unknown> };
  at: Date;
  /** For a queued run: whose other running runs to count (the claim holds that principal's lock). */
  countRunningOf?: string;
};

export type FirstAttemptWritten = { root: SpanRef; span: SpanRef; changes: TraceChange[]; running: number };

type Row = { created: boolean; running: number };
type NewSpan = { id: string; parentId: string | null; kind: "RUN" | "ATTEMPT"; name: string; attributes: Record<string, unknown> };

/**
 * Writes the attempt's beginning when the run has no trace yet; null when it has one (nothing
 * was written, the count aside: the caller writes the rest one by one).
 */
export async function beginFirstAttempt(tx: Tx, begin: FirstAttempt): Promise<(FirstAttemptWritten & { created: true }) | { created: false; running: number }> {
  const traceId = begin.run.id;
  const at = begin.at.toISOString();
  const rootId = newSpanId();
  const attemptId = newSpanId();
  const spans: NewSpan[] = [
    { id: rootId, parentId: null, kind: "RUN", name: toStored(begin.rootSpan.name), attributes: toStoredJson(begin.rootSpan.attributes) },
    {
      id: attemptId,
      parentId: rootId,
      kind: "ATTEMPT",
      name: `attempt ${begin.number}`,
      attributes: toStoredJson({ "dossier.attempt": begin.number, "dossier.instance": begin.instance }),
    },
  ];
  const [row] = await tx.$queryRawUnsafe<Row[]>(
    `WITH trace_row AS (
       INSERT INTO trace (id, run_id, last_seq, records, created_at) VALUES ($1, $1, 2, 2, $3::timestamptz)
       ON CONFLICT DO NOTHING RETURNING id
     ),
     input AS (
       SELECT * FROM jsonb_to_recordset($2::jsonb) AS s(n int, id text, "parentId" text, kind text, name text, attributes jsonb)
     ),
     spans AS (
       INSERT INTO span (id, trace_id, parent_id, kind, name, status, attributes, cost_unpriced, started_at)
       SELECT input.id, $1, input."parentId", input.kind::"SpanKind", input.name, 'RUNNING', input.attributes, false, $3::timestamptz
         FROM input, trace_row ORDER BY input.n
       RETURNING id
     ),
     changes AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT $1, input.n, 'SPAN_STARTED', input.id, '{"status":"RUNNING","endedAt":null,"usage":null}'::jsonb, $3::timestamptz
         FROM input, trace_row
     ),
     attempt AS (
       INSERT INTO run_attempt (run_id, number, instance, started_at, span_id)
       SELECT $1, $4::int, $5, $3::timestamptz, $6 FROM trace_row
     ),
     asked AS (
       SELECT 1 FROM message WHERE conversation_id = $7 AND run_id = $1 AND role = 'USER'
     ),
     counted AS (
       UPDATE conversation SET message_count = message_count + 1
        WHERE id = $7 AND EXISTS (SELECT 1 FROM trace_row) AND NOT EXISTS (SELECT 1 FROM asked)
       RETURNING message_count AS seq
     ),
     question AS (
       INSERT INTO message (id, conversation_id, seq, role, content, run_id, created_at)
       SELECT $8, $7, counted.seq, 'USER', $9, $1, $3::timestamptz FROM counted
     )
     SELECT EXISTS (SELECT 1 FROM trace_row) AS created,
       CASE WHEN $10::text IS NULL THEN 0 ELSE (
         SELECT count(*)::int FROM run
          WHERE owner_id = $10 AND id <> $1 AND ${RUNNING_UNDER_LEASE}) END AS running`,
    traceId,
    JSON.stringify(spans.map((span, index) => ({ n: index + 1, ...span }))),
    at,
    begin.number,
    begin.instance,
    attemptId,
    begin.run.conversationId,
    newSpanId(),
    begin.run.question,
    begin.countRunningOf ?? null,
  );
  const running = Number(row?.running ?? 0);
  if (!row?.created) return { created: false, running };
  const changes = spans.map((span, index) => startedChange({ ...span, traceId }, index + 1, at));
  return { created: true, root: { id: rootId, traceId }, span: { id: attemptId, traceId }, changes, running };
}
