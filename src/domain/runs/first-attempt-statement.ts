// The first attempts of a claim's runs begin in one statement, inside the claim's transaction,
// however many runs the claim took: each run's conversation's execution slot, its trace with its
// RUN and ATTEMPT spans and their two replay-log rows (seq 1 and 2), the attempt's row, and the
// run's question entering its conversation's log — and, for queued runs, the count of each
// principal's other running runs (and of those its access tokens admitted), taken after the claim
// statement's lock of those principals (claim-statement.ts). Each conversation's lineage comes back
// with its slot (it never changes after a fork), so the attempt reads its log in one statement — or
// not at all when the run's question is its conversation's first message: the log is then that
// question, as written here.
// Each run's requests (run-requests.ts: its stop, pause, steering inputs and cost caps) are read
// in the same statement, after the claim took it: the attempt's first turn needs no read of them.
// The same writes took fourteen round trips one by one per run (trace upsert, a span's seq, row
// and log row each, the attempt, the question's count, counter and row), each waited for by the
// run's first model request. A run whose trace already exists (resumed from a pause before its
// first attempt's trace, say) gets only its slot here: the claim then starts its spans as before.
import type { Prisma } from "../../generated/prisma/client.js";
import { fromStored, toStored, toStoredJson } from "../text/stored-text.js";
import { newSpanId } from "../trace/span-ids.js";
import { startedChange } from "../trace/span-statements.js";
import type { TraceChange } from "../trace/trace-writes.js";
import type { SpanRef } from "./vocabulary.js";
import { HOLDING_SLOT } from "./lease-expired.js";
import { type LineageLevel, lineageOf } from "../research/conversation-lineage.js";
import type { Message } from "../../generated/prisma/client.js";
import { requestsOfColumn, type RunRequests, runRequestsColumn } from "./run-requests.js";

type Tx = Prisma.TransactionClient;

export type FirstAttempt = {
  run: { id: string; conversationId: string; question: string };
  rootSpan: { name: string; attributes: Record<string, unknown> };
  /** For a queued run: whose other running runs to count (the claim holds that principal's lock). */
  countRunningOf?: string;
};

export type FirstAttemptBegun = {
  runId: string;
  /** False when the conversation's slot was held by another run: nothing of the statement may stand. */
  slotted: boolean;
  /** The principal's running runs, the runs of this statement aside (0 when not counted). */
  running: number;
  /** Of those, the runs its access tokens admitted (run.admitted_by_token). */
  tokensRunning: number;
  /** The run's conversation's lineage (ConversationLog.read), read with its slot. */
  lineage: LineageLevel[];
  /** The run's requests as the claim left them (read in the statement, after the claim statement took the run). */
  requests?: RunRequests;
  /** The conversation's whole log, when it is the run's question alone (written by this statement). */
  log?: Message[];
} & ({ created: true; root: SpanRef; span: SpanRef; changes: TraceChange[] } | { created: false });

type Row = {
  id: string;
  created: boolean;
  slotted: boolean;
  running: number;
  tokens: number;
  lineage: unknown;
  seq: number | null;
  asks: boolean | null;
  requests: unknown;
};
type NewSpan = { id: string; parentId: string | null; kind: "RUN" | "ATTEMPT"; name: string; attributes: Record<string, unknown> };

/** Writes the beginnings of `begins` (first attempts, numbered 1, of `instance`, all at `at`), one result per run in order. */
export async function beginFirstAttempts(
  tx: Tx,
  begins: readonly FirstAttempt[],
  { instance, at: when, dailyCostLimit = null }: { instance: string; at: Date; dailyCostLimit?: string | null },
): Promise<FirstAttemptBegun[]> {
  const at = when.toISOString();
  const spansOf = begins.map((begin): NewSpan[] => {
    const rootId = newSpanId();
    return [
      { id: rootId, parentId: null, kind: "RUN", name: toStored(begin.rootSpan.name), attributes: toStoredJson(begin.rootSpan.attributes) },
      {
        id: newSpanId(),
        parentId: rootId,
        kind: "ATTEMPT",
        name: "attempt 1",
        attributes: toStoredJson({ "dossier.attempt": 1, "dossier.instance": instance }),
      },
    ];
  });
  const runs = begins.map((begin, index) => ({
    id: begin.run.id,
    conversation: begin.run.conversationId,
    question: begin.run.question,
    message: newSpanId(),
    attemptSpan: spansOf[index]![1]!.id,
    countOf: begin.countRunningOf ?? null,
  }));
  const spans = spansOf.flatMap((pair, index) => pair.map((span, n) => ({ run: begins[index]!.run.id, n: n + 1, ...span })));
  const rows = await tx.$queryRawUnsafe<Row[]>(
    `WITH runs AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id text, conversation text, question text, message text, "attemptSpan" text, "countOf" text)
     ),
     input AS (
       SELECT * FROM jsonb_to_recordset($2::jsonb) AS s(run text, n int, id text, "parentId" text, kind text, name text, attributes jsonb)
     ),
     trace_row AS (
       INSERT INTO trace (id, run_id, last_seq, records, created_at) SELECT runs.id, runs.id, 2, 2, $3::timestamptz FROM runs
       ON CONFLICT DO NOTHING RETURNING id
     ),
     spans AS (
       INSERT INTO span (id, trace_id, parent_id, kind, name, status, attributes, cost_unpriced, started_at)
       SELECT input.id, input.run, input."parentId", input.kind::"SpanKind", input.name, 'RUNNING', input.attributes, false, $3::timestamptz
         FROM input JOIN trace_row ON trace_row.id = input.run ORDER BY input.run, input.n
       RETURNING id
     ),
     changes AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT input.run, input.n, 'SPAN_STARTED', input.id, '{"status":"RUNNING","endedAt":null,"usage":null}'::jsonb, $3::timestamptz
         FROM input JOIN trace_row ON trace_row.id = input.run
     ),
     attempt AS (
       INSERT INTO run_attempt (run_id, number, instance, started_at, span_id)
       SELECT runs.id, 1, $4, $3::timestamptz, runs."attemptSpan" FROM runs JOIN trace_row ON trace_row.id = runs.id
     ),
     asks AS (
       SELECT runs.id, EXISTS (SELECT 1 FROM trace_row WHERE trace_row.id = runs.id)
              AND NOT EXISTS (SELECT 1 FROM message m WHERE m.conversation_id = runs.conversation AND m.run_id = runs.id AND m.role = 'USER') AS asks
         FROM runs
     ),
     slot AS (
       UPDATE conversation c SET active_run_id = runs.id, message_count = c.message_count + CASE WHEN asks.asks THEN 1 ELSE 0 END
         FROM runs JOIN asks ON asks.id = runs.id
        WHERE c.id = runs.conversation AND (c.active_run_id IS NULL OR c.active_run_id = runs.id)
       RETURNING runs.id, asks.asks, c.message_count AS seq, c.lineage
     ),
     question AS (
       INSERT INTO message (id, conversation_id, seq, role, content, run_id, created_at)
       SELECT runs.message, runs.conversation, slot.seq, 'USER', runs.question, runs.id, $3::timestamptz
         FROM slot JOIN runs ON runs.id = slot.id WHERE slot.asks
     )
     SELECT runs.id,
       EXISTS (SELECT 1 FROM trace_row WHERE trace_row.id = runs.id) AS created,
       EXISTS (SELECT 1 FROM slot WHERE slot.id = runs.id) AS slotted,
       (SELECT slot.lineage FROM slot WHERE slot.id = runs.id) AS lineage,
       (SELECT slot.seq FROM slot WHERE slot.id = runs.id) AS seq,
       (SELECT slot.asks FROM slot WHERE slot.id = runs.id) AS asks,
       ${runRequestsColumn("runs.id", "$5")} AS requests,
       COALESCE(counted.n, 0) AS running, COALESCE(counted.t, 0) AS tokens
       FROM runs LEFT JOIN LATERAL (
         SELECT count(*)::int AS n, count(*) FILTER (WHERE admitted_by_token IS NOT NULL)::int AS t FROM run
          WHERE runs."countOf" IS NOT NULL AND owner_id = runs."countOf" AND id <> ALL(SELECT id FROM runs) AND ${HOLDING_SLOT}) AS counted ON true`,
    JSON.stringify(runs),
    JSON.stringify(spans),
    at,
    instance,
    dailyCostLimit,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return begins.map(({ run }, index): FirstAttemptBegun => {
    const row = byId.get(run.id);
    const lineage = lineageOf(row?.lineage);
    const requests = requestsOfColumn(row?.requests);
    const counts = { running: Number(row?.running ?? 0), tokensRunning: Number(row?.tokens ?? 0) };
    const common = { runId: run.id, slotted: Boolean(row?.slotted), ...counts, lineage, ...(requests && { requests }) };
    if (!row?.created) return { ...common, created: false };
    const [root, attempt] = spansOf[index]!;
    // The question is the conversation's first message: the log is known without a read.
    const question = runs[index]!;
    const log: Message[] | undefined =
      row.asks && Number(row.seq) === 1 && lineage.length === 0
        ? [
            {
              id: question.message,
              conversationId: question.conversation,
              seq: 1,
              role: "USER",
              content: fromStored(question.question),
              toolCalls: null,
              toolCallId: null,
              toolName: null,
              runId: run.id,
              createdAt: when,
            },
          ]
        : undefined;
    const changes = spansOf[index]!.map((span, n) => startedChange({ ...span, traceId: run.id }, n + 1, at));
    return { ...common, ...(log && { log }), created: true, root: { id: root!.id, traceId: run.id }, span: { id: attempt!.id, traceId: run.id }, changes };
  });
}
