// A span's start, an end that only sets its status, and a trace's end, each as one statement: the trace's next
// seq number, the span row and its replay-log row written together, with the attempt fence's
// check (domain/runs/holder.ts) carried inside the statement. One statement is atomic on its own,
// so these need no transaction: a turn's spans cost one round trip each instead of five. When the
// check fails nothing is written and the result is null; the caller then writes through its
// fenced transaction, which refuses the attempt and says why.
import type { SpanState } from "../../events/topics.js";
import { queryRows } from "../../db/direct-statements.js";
import type { Prisma, SpanKind, SpanStatus } from "../../generated/prisma/client.js";
import { toStored, toStoredJson } from "../text/stored-text.js";
import type { StatementGuard, TraceChange } from "./trace-writes.js";
import { newSpanId } from "./span-ids.js";

type Db = Prisma.TransactionClient;

/** What stands for the check without a guard: never read (its run id is null), it only types the parameters. */
const unguarded = (first: number) => `SELECT $${first + 1}::int AS attempt, $${first + 2}::text AS worker`;

const UNBOUNDED = 2_147_483_647;

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export type NewSpanRow = {
  id?: string;
  traceId: string;
  parentId: string | null;
  kind: SpanKind;
  name: string;
  attributes?: Record<string, unknown>;
  at: Date;
};

/**
 * Starts a span in one statement. `kept: false`: the trace holds `maxRecords` spans and events
 * already, and nothing was written but the count. Null: the guard's attempt no longer holds the
 * run (or the trace is gone), and nothing was written at all.
 */
export async function startSpanStatement(
  db: Db,
  input: NewSpanRow,
  guard: StatementGuard | undefined,
  maxRecords: number = UNBOUNDED,
): Promise<{ kept: true; spanId: string; change: TraceChange } | { kept: false } | null> {
  const id = input.id ?? newSpanId();
  const attributes = toStoredJson(input.attributes ?? {});
  const name = toStored(input.name);
  const [taken] = await queryRows<{ seq: number; kept: boolean }>(
    db,
    `WITH holder AS (${guard ? guard.holdsRunSql(3) : unguarded(3)}),
     seqs AS (
       UPDATE trace SET last_seq = last_seq + CASE WHEN records < $2::int THEN 1 ELSE 0 END, records = records + 1
       WHERE id = $1 AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM holder))
       RETURNING last_seq AS seq, records <= $2::int AS kept
     ),
     span AS (
       INSERT INTO span (id, trace_id, parent_id, kind, name, status, attributes, cost_unpriced, started_at)
       SELECT $6::text, $1::text, $7::text, $8::"SpanKind", $9::text, 'RUNNING', $10::jsonb, false, $11::timestamptz FROM seqs WHERE seqs.kept
     ),
     change AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT $1::text, seqs.seq, 'SPAN_STARTED', $6::text, $12::jsonb, $11::timestamptz FROM seqs WHERE seqs.kept
     )
     SELECT seq, kept FROM seqs`,
    input.traceId,
    Math.min(maxRecords, UNBOUNDED),
    guard?.runId ?? null,
    guard?.attempt ?? null,
    guard?.workerId ?? null,
    id,
    input.parentId,
    input.kind,
    name,
    JSON.stringify(attributes),
    input.at.toISOString(),
    JSON.stringify({ status: "RUNNING", endedAt: null, usage: null }),
  );
  if (!taken) return null;
  if (!taken.kept) return { kept: false };
  const change = startedChange(
    { id, traceId: input.traceId, parentId: input.parentId, kind: input.kind, name, attributes },
    Number(taken.seq),
    input.at.toISOString(),
  );
  return { kept: true, spanId: id, change };
}

/** The replay-log change of a span started at `at` (ISO) with seq `seq`: its name and attributes as stored. */
export function startedChange(
  span: { id: string; traceId: string; parentId: string | null; kind: string; name: string; attributes: Record<string, unknown> },
  seq: number,
  at: string,
): TraceChange {
  const state: SpanState = {
    ...span,
    status: "RUNNING",
    attributes: span.attributes as SpanState["attributes"],
    usage: null,
    cost: null,
    costUnpriced: false,
    startedAt: at,
    endedAt: null,
  };
  return { traceId: span.traceId, seq, type: "SPAN_STARTED", spanId: span.id, eventId: null, span: state, at };
}

/** What a statement ending a span returns of it: its new seq and the columns of its state. */
export type EndedRow = {
  seq: number;
  parent_id: string | null;
  kind: string;
  name: string;
  attributes: string;
  usage: string | null;
  cost: string | null;
  cost_unpriced: boolean;
  started_at: string;
};

/**
 * Ends a span with `status` (nothing else of it changes) in one statement. Null: the guard's
 * attempt no longer holds the run, or the span is gone, and nothing was written.
 */
export async function endSpanStatement(
  db: Db,
  span: { id: string; traceId: string },
  end: { status: SpanStatus; at: Date },
  guard: StatementGuard | undefined,
): Promise<TraceChange | null> {
  const at = end.at.toISOString();
  const [row] = await queryRows<EndedRow>(
    db,
    `WITH holder AS (${guard ? guard.holdsRunSql(2) : unguarded(2)}),
     seqs AS (
       UPDATE trace SET last_seq = last_seq + 1
       WHERE id = $1 AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM holder)) AND EXISTS (SELECT 1 FROM span WHERE id = $5)
       RETURNING last_seq AS seq
     ),
     ended AS (
       UPDATE span SET status = $6::"SpanStatus", ended_at = $7::text::timestamptz FROM seqs WHERE span.id = $5
       RETURNING span.*, seqs.seq
     ),
     change AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT $1, ended.seq, 'SPAN_ENDED', ended.id,
         jsonb_build_object('status', ended.status::text, 'endedAt', $7::text, 'usage', ended.usage)
           || CASE WHEN ended.cost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cost', trim_scale(ended.cost)::text) END
           || CASE WHEN ended.cost_unpriced THEN '{"costUnpriced": true}'::jsonb ELSE '{}'::jsonb END,
         $7::text::timestamptz
       FROM ended
     )
     SELECT seq, parent_id, kind::text AS kind, name, attributes::text AS attributes, usage::text AS usage,
            trim_scale(cost)::text AS cost, cost_unpriced, ${iso("started_at")} AS started_at
       FROM ended`,
    span.traceId,
    guard?.runId ?? null,
    guard?.attempt ?? null,
    guard?.workerId ?? null,
    span.id,
    end.status,
    at,
  );
  if (!row) return null;
  return endedChange(span, end.status, row, at);
}

/** The replay-log change of a span ended with `status` at `at`, from the row its statement returned. */
export function endedChange(span: { id: string; traceId: string }, status: SpanStatus, row: EndedRow, at: string): TraceChange {
  const state: SpanState = {
    id: span.id,
    traceId: span.traceId,
    parentId: row.parent_id,
    kind: row.kind,
    name: row.name,
    status,
    attributes: JSON.parse(row.attributes) as SpanState["attributes"],
    usage: row.usage === null ? null : (JSON.parse(row.usage) as SpanState["usage"]),
    cost: row.cost,
    costUnpriced: row.cost_unpriced,
    startedAt: row.started_at,
    endedAt: at,
  };
  return { traceId: span.traceId, seq: Number(row.seq), type: "SPAN_ENDED", spanId: span.id, eventId: null, span: state, at };
}

/**
 * Marks the trace ended in one statement, its replay-log row with it (TRACE_ENDED, the trace's
 * next seq); null when it had ended already, and nothing was written. A trace ends once.
 */
export async function endTraceStatement(db: Db, traceId: string, at: Date): Promise<TraceChange | null> {
  const [row] = await queryRows<{ seq: number }>(
    db,
    `WITH ended AS (
       UPDATE trace SET ended_at = $2::text::timestamptz, last_seq = last_seq + 1 WHERE id = $1 AND ended_at IS NULL RETURNING last_seq AS seq
     )
     INSERT INTO trace_change (trace_id, seq, type, at) SELECT $1, ended.seq, 'TRACE_ENDED', $2::text::timestamptz FROM ended
     RETURNING seq`,
    traceId,
    at.toISOString(),
  );
  if (!row) return null;
  return { traceId, seq: Number(row.seq), type: "TRACE_ENDED", spanId: null, eventId: null, span: null, at: at.toISOString() };
}
