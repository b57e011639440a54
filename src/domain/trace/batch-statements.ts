// An attempt's queued trace records — span starts, span ends that only set a status, events, in
// the order the runtime made them — written to one trace as one statement: the fence's check
// once, one step of the trace's seq numbers for the whole batch, and the span, event and replay
// log rows written together. A turn's records then cost one round trip, not one each.
//
// The batch is written whole or not at all: when the attempt no longer holds its run, when the
// trace's bound (MAX_TRACE_RECORDS) would not keep all of it, or when a span it ends is missing,
// nothing is written and the result is null. The caller then writes the records one by one as
// before (span-statements.ts, trace-writes.ts), which decides the bound record by record, folds
// spans, and refuses a lost attempt with why — so those rare cases behave exactly as they did.
import type { SpanState } from "../../events/topics.js";
import { queryRows } from "../../db/direct-statements.js";
import type { Prisma, SpanKind, SpanStatus } from "../../generated/prisma/client.js";
import { toStored, toStoredJson } from "../text/stored-text.js";
import { type NewEvent, type StatementGuard, storedEvent, type TraceChange } from "./trace-writes.js";

type Db = Prisma.TransactionClient;

export type BatchRecord =
  | { type: "start"; id: string; parentId: string | null; kind: SpanKind; name: string; attributes?: Record<string, unknown>; at: Date }
  | { type: "end"; spanId: string; status: SpanStatus; at: Date }
  | { type: "event"; event: NewEvent };

/** One row of the statement's input, in the order of the records (n from 1). */
type InputRow = {
  n: number;
  type: BatchRecord["type"];
  id: string | null;
  span_id: string;
  parent_id?: string | null;
  kind?: string;
  name?: string;
  status?: SpanStatus;
  attributes?: unknown;
  payload?: string;
  message_id?: string | null;
  preview?: string;
  payload_size?: number;
  at: string;
  ended_at?: string | null;
  span_after?: unknown;
  /** An end of a span started in the same batch: its row is inserted ended, not updated. */
  here?: boolean;
};

type EndedRow = {
  n: number;
  parent_id: string | null;
  kind: string;
  name: string;
  attributes: SpanState["attributes"];
  usage: SpanState["usage"];
  cost: string | null;
  cost_unpriced: boolean;
  started_at: string;
};

const UNBOUNDED = 2_147_483_647;

const RUNNING_AFTER = { status: "RUNNING", endedAt: null, usage: null };

/** What stands for the check without a guard: never read (its run id is null), it only types the parameters. */
const unguarded = (first: number) => `SELECT $${first + 1}::int AS attempt, $${first + 2}::text AS worker`;

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Writes `records` to the trace in one statement and returns their changes, in the order (and
 * seq order) of the records. Null: nothing was written (see above). Two ends of one span do not
 * go in one batch (the caller splits them).
 */
export async function writeBatchStatement(
  db: Db,
  traceId: string,
  records: readonly BatchRecord[],
  guard: StatementGuard | undefined,
  maxRecords: number = UNBOUNDED,
): Promise<TraceChange[] | null> {
  const rows: InputRow[] = [];
  const started = new Map<string, { row: InputRow; state: SpanState }>();
  const states: (SpanState | null)[] = [];
  for (const [index, record] of records.entries()) {
    const n = index + 1;
    if (record.type === "event") {
      rows.push({ n, type: "event", ...storedEvent(record.event) });
      states.push(null);
    } else if (record.type === "start") {
      const attributes = toStoredJson(record.attributes ?? {});
      const at = record.at.toISOString();
      const row: InputRow = {
        n,
        type: "start",
        id: null,
        span_id: record.id,
        parent_id: record.parentId,
        kind: record.kind,
        name: toStored(record.name),
        status: "RUNNING",
        attributes,
        at,
        ended_at: null,
        span_after: RUNNING_AFTER,
      };
      const state: SpanState = {
        ...{ id: record.id, traceId, parentId: record.parentId, kind: record.kind, name: row.name!, status: "RUNNING" },
        ...{ attributes: attributes as SpanState["attributes"], usage: null, cost: null, costUnpriced: false, startedAt: at, endedAt: null },
      };
      rows.push(row);
      states.push(state);
      started.set(record.id, { row, state });
    } else {
      const at = record.at.toISOString();
      const here = started.get(record.spanId);
      if (here) {
        // Started in this batch: its row goes in ended (a row one statement inserts, it cannot also update).
        here.row.status = record.status;
        here.row.ended_at = at;
      }
      const span_after = { status: record.status, endedAt: at, usage: null };
      rows.push({ n, type: "end", id: null, span_id: record.spanId, status: record.status, at, ...(here && { here: true, span_after }) });
      states.push(here ? { ...here.state, status: record.status, endedAt: at } : null);
    }
  }
  const counted = records.filter((record) => record.type !== "end").length;
  const [taken] = await queryRows<{ base: number; ended: string | null }>(
    db,
    `WITH holder AS (${guard ? guard.holdsRunSql(6) : unguarded(6)}),
     input AS (
       SELECT * FROM jsonb_to_recordset($5::jsonb) AS r(n int, type text, id text, span_id text, parent_id text, kind text, name text,
         status text, attributes jsonb, payload text, message_id text, preview text, payload_size int, at text, ended_at text,
         span_after jsonb, here boolean)
     ),
     seqs AS (
       UPDATE trace SET last_seq = last_seq + $2::int, records = records + $3::int
       WHERE id = $1 AND ($6::text IS NULL OR EXISTS (SELECT 1 FROM holder)) AND records + $3::int <= $4::int
         AND (SELECT count(*) FROM span WHERE id IN (SELECT span_id FROM input WHERE type = 'end' AND here IS NOT TRUE))
           = (SELECT count(*) FROM input WHERE type = 'end' AND here IS NOT TRUE)
       RETURNING last_seq - $2::int AS base
     ),
     spans AS (
       INSERT INTO span (id, trace_id, parent_id, kind, name, status, attributes, cost_unpriced, started_at, ended_at)
       SELECT input.span_id, $1::text, input.parent_id, input.kind::"SpanKind", input.name, input.status::"SpanStatus", input.attributes, false,
         input.at::timestamptz, input.ended_at::timestamptz
       FROM input, seqs WHERE input.type = 'start'
     ),
     ended AS (
       UPDATE span SET status = input.status::"SpanStatus", ended_at = input.at::timestamptz FROM input, seqs
       WHERE input.type = 'end' AND input.here IS NOT TRUE AND span.id = input.span_id
       RETURNING span.*, input.n, seqs.base + input.n AS seq, input.at AS end_at
     ),
     events AS (
       INSERT INTO span_event (id, span_id, seq, kind, payload, message_id, preview, payload_size, at)
       SELECT input.id, input.span_id, seqs.base + input.n, input.kind::"SpanEventKind", input.payload, input.message_id, input.preview,
         input.payload_size, input.at::timestamptz
       FROM input, seqs WHERE input.type = 'event'
     ),
     changes AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, event_id, span_after, at)
       SELECT $1::text, seqs.base + input.n,
         (CASE input.type WHEN 'start' THEN 'SPAN_STARTED' WHEN 'event' THEN 'EVENT_APPENDED' ELSE 'SPAN_ENDED' END)::"TraceChangeType",
         input.span_id, input.id, input.span_after, input.at::timestamptz
       FROM input, seqs WHERE input.type <> 'end' OR input.here
       UNION ALL
       SELECT $1::text, ended.seq, 'SPAN_ENDED'::"TraceChangeType", ended.id, NULL,
         jsonb_build_object('status', ended.status::text, 'endedAt', ended.end_at, 'usage', ended.usage)
           || CASE WHEN ended.cost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cost', trim_scale(ended.cost)::text) END
           || CASE WHEN ended.cost_unpriced THEN '{"costUnpriced": true}'::jsonb ELSE '{}'::jsonb END,
         ended.end_at::timestamptz
       FROM ended
     )
     SELECT base,
       (SELECT json_agg(json_build_object('n', n, 'parent_id', parent_id, 'kind', kind::text, 'name', name, 'attributes', attributes,
          'usage', usage, 'cost', trim_scale(cost)::text, 'cost_unpriced', cost_unpriced, 'started_at', ${iso("started_at")}))::text FROM ended) AS ended
     FROM seqs`,
    traceId,
    records.length,
    counted,
    Math.min(maxRecords, UNBOUNDED),
    JSON.stringify(rows),
    guard?.runId ?? null,
    guard?.attempt ?? null,
    guard?.workerId ?? null,
  );
  if (!taken) return null;
  const base = Number(taken.base);
  for (const row of JSON.parse(taken.ended ?? "[]") as EndedRow[]) {
    const end = rows[row.n - 1]!;
    states[row.n - 1] = {
      ...{ id: end.span_id, traceId, parentId: row.parent_id, kind: row.kind, name: row.name, status: end.status!, attributes: row.attributes },
      ...{ usage: row.usage, cost: row.cost, costUnpriced: row.cost_unpriced, startedAt: row.started_at, endedAt: end.at },
    };
  }
  return rows.map((row, index) => ({
    traceId,
    seq: base + row.n,
    type: row.type === "start" ? "SPAN_STARTED" : row.type === "event" ? "EVENT_APPENDED" : "SPAN_ENDED",
    spanId: row.span_id,
    eventId: row.type === "event" ? row.id : null,
    span: states[index] ?? null,
    at: row.at,
  }));
}
