// Traces written over the past ten weeks, in a few statements (PostgreSQL): for the test of the
// partitioning of existing trace tables and its 1,000,000-record benchmark. Each trace has a RUN
// span and 9 tool spans under it, 4 events per span, and a replay log of 60 changes (each span's
// start and end, each event): 110 records per trace. Trace i ended i × (70 days / traces) ago, or
// that much before `endedDaysAgo` days ago (the retention benchmark seeds traces already due).
import { seedRunsSql } from "./run-seed.js";

export const RECORDS_PER_TRACE = 110;

export function seedTracesSql(traces: number, { endedDaysAgo = 0 }: { endedDaysAgo?: number } = {}): string {
  const at = `now() - interval '${endedDaysAgo} days' - i * interval '${Math.round((70 * 24 * 3600) / traces)} seconds'`;
  return `
  INSERT INTO principal (id, name) VALUES ('development', 'Development principal') ON CONFLICT DO NOTHING;
  ${seedRunsSql(traces)}
  SET session_replication_role = replica;
  INSERT INTO trace (id, run_id, last_seq, created_at, ended_at)
    SELECT 'r' || i, 'r' || i, 60, ${at} - interval '10 minutes', ${at} FROM generate_series(1, ${traces}) i;
  INSERT INTO span (id, trace_id, parent_id, kind, name, status, attributes, started_at, ended_at)
    SELECT 's' || i || '_' || j, 'r' || i, CASE WHEN j = 1 THEN NULL ELSE 's' || i || '_1' END,
           (CASE WHEN j = 1 THEN 'RUN' ELSE 'TOOL_CALL' END)::"SpanKind", 'span ' || j, 'OK'::"SpanStatus",
           '{"tool":"fetch_report","arguments":{"page":3}}', ${at} - interval '10 minutes' + j * interval '1 second', ${at}
      FROM generate_series(1, ${traces}) i, generate_series(1, 10) j;
  INSERT INTO span_event (id, span_id, seq, kind, payload, preview, payload_size, at)
    SELECT 'e' || i || '_' || j || '_' || k, 's' || i || '_' || j, 20 + (j - 1) * 4 + k, 'TOOL_OUTPUT'::"SpanEventKind",
           'a tool result of a few words', 'a tool result of a few words', 28, ${at} - interval '9 minutes' + j * interval '1 second'
      FROM generate_series(1, ${traces}) i, generate_series(1, 10) j, generate_series(1, 4) k;
  INSERT INTO trace_change (trace_id, seq, type, span_id, event_id, at)
    SELECT 'r' || i, n, (CASE WHEN n <= 10 THEN 'SPAN_STARTED' WHEN n <= 20 THEN 'SPAN_ENDED' ELSE 'EVENT_APPENDED' END)::"TraceChangeType",
           's' || i || '_' || ((n - 1) % 10 + 1), NULL, ${at} - interval '9 minutes'
      FROM generate_series(1, ${traces}) i, generate_series(1, 60) n;
  SET session_replication_role = origin;
  ANALYZE trace; ANALYZE span; ANALYZE span_event; ANALYZE trace_change;`;
}
