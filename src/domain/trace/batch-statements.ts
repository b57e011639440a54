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
//
// The same writes can ride in another one-statement write of the attempt (a tool result's log
// append: domain/transaction.ts, Carried), behind that statement's fence check: the records made
// before the entry then reach the database with it, in its round trip, and the entry is written
// only if they are.
import type { SpanState } from "../../events/topics.js";
import { queryRows } from "../../db/direct-statements.js";
import type { Prisma, SpanKind, SpanStatus } from "../../generated/prisma/client.js";
import { toStored, toStoredJson } from "../text/stored-text.js";
import type { Carried } from "../transaction.js";
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
const UNGUARDED = "SELECT $2::int AS attempt, $3::text AS worker";

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** What the batch's statement gives back: the first seq's base and the spans it ended (null: nothing written). */
type Taken = { base: number | string; ended: EndedRow[] | null };

/** The batch's input rows and the states its starts and ends leave their spans in. */
function inputRows(traceId: string, records: readonly BatchRecord[]): { rows: InputRow[]; states: (SpanState | null)[] } {
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
  return { rows, states };
}

/**
 * The batch as CTEs (without WITH; their names begin with `batch_`, so that they ride beside
 * another statement's own), its parameters numbered from $first, every write waiting for `guard`;
 * `result`, the expression of what it wrote (null: nothing); `changes`, that result read back as
 * the records' changes in their order.
 */
function batchSql(traceId: string, records: readonly BatchRecord[], maxRecords: number, first: number, guard: string, shared?: string) {
  const $ = (n: number) => `$${first + n - 1}`;
  const { rows, states } = inputRows(traceId, records);
  const counted = records.filter((record) => record.type !== "end").length;
  // What the trace row must allow for the batch: its bound, and every span it ends (not started in it) there.
  // `input`: the batch's rows (a carrying statement checks them before batch_input is defined).
  const holds = (trace: string, input = "batch_input") => `${trace}.records + ${$(3)}::int <= ${$(4)}::int
         AND (SELECT count(*) FROM span WHERE id IN (SELECT span_id FROM ${input} WHERE type = 'end' AND here IS NOT TRUE))
           = (SELECT count(*) FROM ${input} WHERE type = 'end' AND here IS NOT TRUE)`;
  // Shared: the carrying statement's own update of the trace row takes the batch's seq numbers
  // first (one row is updated once in a statement); the batch reads their base from it.
  const seqs = shared
    ? `batch_seqs AS (SELECT base FROM ${shared})`
    : `batch_seqs AS (
       UPDATE trace SET last_seq = last_seq + ${$(2)}::int, records = records + ${$(3)}::int
       WHERE id = ${$(1)} AND ${guard} AND ${holds("trace")}
       RETURNING last_seq - ${$(2)}::int AS base
     )`;
  const ctes = `batch_input AS (
       SELECT * FROM jsonb_to_recordset(${$(5)}::jsonb) AS r(n int, type text, id text, span_id text, parent_id text, kind text, name text,
         status text, attributes jsonb, payload text, message_id text, preview text, payload_size int, at text, ended_at text,
         span_after jsonb, here boolean)
     ),
     ${seqs},
     batch_spans AS (
       INSERT INTO span (id, trace_id, parent_id, kind, name, status, attributes, cost_unpriced, started_at, ended_at)
       SELECT i.span_id, ${$(1)}::text, i.parent_id, i.kind::"SpanKind", i.name, i.status::"SpanStatus", i.attributes, false,
         i.at::timestamptz, i.ended_at::timestamptz
       FROM batch_input i, batch_seqs WHERE i.type = 'start'
     ),
     batch_ended AS (
       UPDATE span SET status = i.status::"SpanStatus", ended_at = i.at::timestamptz FROM batch_input i, batch_seqs
       WHERE i.type = 'end' AND i.here IS NOT TRUE AND span.id = i.span_id
       RETURNING span.*, i.n, batch_seqs.base + i.n AS seq, i.at AS end_at
     ),
     batch_events AS (
       INSERT INTO span_event (id, span_id, seq, kind, payload, message_id, preview, payload_size, at)
       SELECT i.id, i.span_id, batch_seqs.base + i.n, i.kind::"SpanEventKind", i.payload, i.message_id, i.preview,
         i.payload_size, i.at::timestamptz
       FROM batch_input i, batch_seqs WHERE i.type = 'event'
     ),
     batch_changes AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, event_id, span_after, at)
       SELECT ${$(1)}::text, batch_seqs.base + i.n,
         (CASE i.type WHEN 'start' THEN 'SPAN_STARTED' WHEN 'event' THEN 'EVENT_APPENDED' ELSE 'SPAN_ENDED' END)::"TraceChangeType",
         i.span_id, i.id, i.span_after, i.at::timestamptz
       FROM batch_input i, batch_seqs WHERE i.type <> 'end' OR i.here
       UNION ALL
       SELECT ${$(1)}::text, batch_ended.seq, 'SPAN_ENDED'::"TraceChangeType", batch_ended.id, NULL,
         jsonb_build_object('status', batch_ended.status::text, 'endedAt', batch_ended.end_at, 'usage', batch_ended.usage)
           || CASE WHEN batch_ended.cost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cost', trim_scale(batch_ended.cost)::text) END
           || CASE WHEN batch_ended.cost_unpriced THEN '{"costUnpriced": true}'::jsonb ELSE '{}'::jsonb END,
         batch_ended.end_at::timestamptz
       FROM batch_ended
     )`;
  const result = `(SELECT jsonb_build_object('base', base, 'ended',
       (SELECT jsonb_agg(jsonb_build_object('n', e.n, 'parent_id', e.parent_id, 'kind', e.kind::text, 'name', e.name, 'attributes', e.attributes,
          'usage', e.usage, 'cost', trim_scale(e.cost)::text, 'cost_unpriced', e.cost_unpriced, 'started_at', ${iso("e.started_at")})) FROM batch_ended e))
     FROM batch_seqs)`;
  const params = [traceId, records.length, counted, Math.min(maxRecords, UNBOUNDED), JSON.stringify(rows)];
  const changes = (taken: Taken | null): TraceChange[] | null => {
    if (!taken) return null;
    const base = Number(taken.base);
    for (const row of taken.ended ?? []) {
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
  };
  const step = { count: $(2), counted: $(3) };
  return { ctes, params, result, changes, holds, step };
}

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
  const batch = batchSql(traceId, records, maxRecords, 4, "($1::text IS NULL OR EXISTS (SELECT 1 FROM holder))");
  const [row] = await queryRows<{ taken: Taken | null }>(
    db,
    `WITH holder AS (${guard ? guard.holdsRunSql(1) : UNGUARDED}), ${batch.ctes} SELECT ${batch.result} AS taken`,
    guard?.runId ?? null,
    guard?.attempt ?? null,
    guard?.workerId ?? null,
    ...batch.params,
  );
  return batch.changes(row?.taken ?? null);
}

/**
 * The same batch, to ride in another one-statement write (Carried): `written` is called with the
 * records' changes once that statement committed with them. Two ends of one span do not go in it.
 */
export function carriedBatch(
  traceId: string,
  records: readonly BatchRecord[],
  maxRecords: number | undefined,
  written: (changes: TraceChange[]) => void,
): Carried {
  const sql = (first: number, guard: string, shared?: string) => batchSql(traceId, records, maxRecords ?? UNBOUNDED, first, guard, shared);
  let built: ReturnType<typeof sql> | undefined;
  // Spans the batch starts and leaves running: a statement that ends the trace cannot carry them.
  const ended = new Set(records.flatMap((record) => (record.type === "end" ? [record.spanId] : [])));
  const leavesRunning = records.some((record) => record.type === "start" && !ended.has(record.id));
  return {
    sql(first, guard) {
      built = sql(first, guard);
      return { ctes: built.ctes, params: built.params, result: built.result, written: "EXISTS (SELECT 1 FROM batch_seqs)" };
    },
    ...(!leavesRunning && {
      sharing(first: number, seqs: string) {
        built = sql(first, "true", seqs);
        const { ctes, params, result, holds, step } = built;
        const input = `(SELECT * FROM jsonb_to_recordset($${first + 4}::jsonb) AS r(type text, span_id text, here boolean)) AS carried_input`;
        return { ctes, params, result, holds: (trace: string) => holds(trace, input), step, ends: [...ended] };
      },
    }),
    settle(result) {
      const changes = built?.changes(result as Taken);
      if (changes) written(changes);
    },
  };
}
