// The settle of an attempt whose run did not fail, as one statement: on its own, carrying the
// fence's check in its update of the run row (the row locked, still RUNNING under this attempt and
// worker: holder.ts), or in a fenced transaction after the check: the run row's terminal status, the
// attempt's end, the RUN and ATTEMPT spans ended as the outcome says with the trace, the run's
// pending steering inputs released, the conversation's slot given back, the webhook outbox's
// message with the run's cost as the statement reads it, and what the settle steps write (the
// publication's outcome when the run publishes nothing, its spills released) — what the settle
// row of transitions.ts writes statement by statement in apply-transition.ts. It applies only
// when nothing else is left to decide: no open approval request, no pending proposal, no span
// open but the attempt's own and the RUN span, the trace not ended; and only when every settle
// step says what it writes here. Otherwise the statement writes nothing and says so, and the
// settle takes the transition's statements one by one (settle.ts: in a transaction of the Prisma
// client when this one went straight through the driver; its fence check says why an attempt lost
// its run). On its own, a settle is one round trip instead of four (BEGIN, the check, the
// statement, COMMIT), and its pooled connection is not held while the worker's event loop, busy
// with many runs ending together, gets round to each answer.
import type { Prisma } from "../../generated/prisma/client.js";
import { type DirectQuery, queryRows } from "../../db/direct-statements.js";
import type { Carried } from "../transaction.js";
import { toStored } from "../text/stored-text.js";
import { endedChange, type EndedRow } from "../trace/span-statements.js";
import type { TraceChange } from "../trace/trace-writes.js";
import { endedRunEvent } from "../webhooks/webhook-events.js";
import { type Applied, statusAfter, type TransitionDetails, type TransitionRun } from "./apply-transition.js";
import type { Holder } from "./holder.js";
import { stopReasonAfter } from "./stop-reasons.js";
import type { Transition } from "./transition-row.js";
import type { Outcome, RunRecord, RunStatusName, SettleStepInStatement, SpanRef } from "./vocabulary.js";

/** The rows whose settle can be one statement: each writes exactly what this statement writes. */
const ONE_STATEMENT_ROWS: ReadonlySet<string> = new Set(["settle", "conclude", "budgetStop", "stopAfterTurn"]);

/** The span status a settled run's own spans end with (transition-spans.ts): a failed outcome never comes here. */
const spanStatusOf = (outcome: Outcome): "OK" | "CANCELLED" => (outcome.type === "interrupted" ? "CANCELLED" : "OK");

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** `holder`: the attempt that must still hold the run, checked in the statement (holder.ts) when it is not in a fenced transaction. */
type Settling = { run: TransitionRun; status: RunStatusName; outcome: Outcome; attempt: number; spans: { root: SpanRef; attempt: SpanRef }; holder?: Holder };

/** What the settle steps write in the statement, or null when one of them cannot be written there. */
function stepsInStatement(details: TransitionDetails, run: TransitionRun, outcome: Outcome): SettleStepInStatement | null {
  const merged: SettleStepInStatement = {};
  for (const step of details.steps ?? []) {
    const part = step.inStatement?.(run as RunRecord, outcome);
    if (!part) return null;
    Object.assign(merged, part);
  }
  return merged;
}

/**
 * Settles by `row` in one statement in `tx` (the fence's check already made in it); null when this
 * settle is not one for a single statement, or when the statement found something left to decide
 * and wrote nothing: the caller then applies the transition statement by statement. `tx` is the
 * fenced transaction, through the Prisma client or straight through the driver (DirectQuery).
 */
export async function settleInOneStatement(
  tx: Prisma.TransactionClient | DirectQuery,
  row: Transition,
  run: TransitionRun,
  details: TransitionDetails & { outcome: Outcome },
  holder?: Holder,
  carry?: Carried,
): Promise<Applied | null> {
  const { outcome, spans, attempt } = details;
  const steps = inOneStatement(row, run, details);
  if (!steps || !spans || !attempt) return null;
  return runStatement(tx, row, { run, status: statusAfter(row, outcome), outcome, attempt: attempt.number, spans, holder }, details, steps, carry);
}

/**
 * What the settle steps write in the single statement, when this settle is one for it (which may
 * still find something left to decide, and write nothing); null when it is not.
 */
export function inOneStatement(row: Transition, run: TransitionRun, details: TransitionDetails & { outcome: Outcome }): SettleStepInStatement | null {
  const { outcome, spans, attempt } = details;
  if (!ONE_STATEMENT_ROWS.has(row.name) || !spans || !attempt) return null;
  if (outcome.type === "failed" || outcome.type === "waiting") return null;
  const status = statusAfter(row, outcome);
  if (status !== "SUCCEEDED" && status !== "CANCELLED" && status !== "TIMED_OUT") return null;
  return stepsInStatement(details, run, outcome);
}

/** The run row's new columns as SET items, their values added to `p`. */
function runColumns(row: Transition, settling: Settling, at: string, p: (value: unknown) => string): string[] {
  const { outcome, status } = settling;
  const sets = [`status = ${p(status)}::text::"RunStatus"`, "lease_owner = NULL", "lease_expires_at = NULL", `finished_at = ${p(at)}::text::timestamptz`];
  const stopReason = stopReasonAfter(row, outcome);
  if (stopReason) sets.push(`stop_reason = ${p(stopReason)}::text::"RunStopReason"`);
  const text = outcome.type === "final" ? outcome.answer : null;
  if (row.name === "settle") sets.push(`answer = ${p(text === null ? null : toStored(text))}::text`, "failure_reason = NULL");
  if (row.name === "conclude") sets.push(`answer = ${p(text === null ? null : toStored(text))}::text`, "concluded_early = true");
  if (row.name === "budgetStop") sets.push(text ? `answer = ${p(toStored(text))}::text, answer_partial = true` : "answer = NULL");
  return sets;
}

type Answered = { moved: number; base: number | null; webhooks: number; spans: (EndedRow & { id: string })[] | null; carried?: unknown };

async function runStatement(
  tx: Prisma.TransactionClient | DirectQuery,
  row: Transition,
  settling: Settling,
  details: TransitionDetails,
  steps: SettleStepInStatement,
  carry?: Carried,
): Promise<Applied | null> {
  const { run, spans } = settling;
  const params: unknown[] = [run.id, spans.root.traceId, spans.attempt.id, spans.root.id, details.at.toISOString()];
  // The attempt's trace records still queued (the final reply's event, its turn's end) ride in the
  // statement, their seq numbers right before the settle's own, from the same update of the trace row.
  const carried = carry?.sharing?.(params.length + 1, "seqs");
  // A write that cannot go here (or ends the settle's own spans) is written on its own first: nothing is sent.
  if (carry && (!carried || carried.ends.some((id) => id === spans.attempt.id || id === spans.root.id))) return null;
  if (carried) params.push(...carried.params);
  const p = (value: unknown) => `$${params.push(value)}`;
  const [runId, traceId, attemptSpan, rootSpan, at] = ["$1::text", "$2::text", "$3::text", "$4::text", "$5::text::timestamptz"];
  const moved = "EXISTS (SELECT 1 FROM moved)";
  const spanStatus = p(spanStatusOf(settling.outcome));
  const step = carried ? `${carried.step.count}::int` : "0";
  const ctes = [
    `moved AS (
       UPDATE run SET ${runColumns(row, settling, details.at.toISOString(), p).join(", ")}
       WHERE id = ${runId} AND status::text IN (${row.from.map((from) => p(from)).join(", ")})
         ${settling.holder ? `AND attempt = ${p(settling.holder.attempt)}::int AND lease_owner = ${p(settling.holder.workerId)}::text AND status = 'RUNNING'` : ""}
         AND NOT EXISTS (SELECT 1 FROM tool_approval a WHERE a.run_id = ${runId} AND a.decision IS NULL)
         ${steps.noPendingProposals ? `AND NOT EXISTS (SELECT 1 FROM checkpoint_proposal c WHERE c.run_id = ${runId} AND c.status = 'PENDING')` : ""}
         AND NOT EXISTS (SELECT 1 FROM span s WHERE s.trace_id = ${traceId} AND s.status = 'RUNNING' AND s.id <> ${attemptSpan} AND s.id <> ${rootSpan}
           ${carried ? `AND s.id <> ALL (${p(carried.ends)}::text[])` : ""})
         AND EXISTS (SELECT 1 FROM trace t WHERE t.id = ${traceId} AND t.ended_at IS NULL ${carried ? `AND ${carried.holds("t")}` : ""})
         AND (SELECT count(*) FROM span s WHERE s.id IN (${attemptSpan}, ${rootSpan})) = 2
       RETURNING trim_scale(cost)::text AS cost, cost_unpriced
     )`,
    // The carried records (`base`: the seq before them), then the attempt's span, the RUN span and
    // the trace's end (`own`: the seq before those three), in that order, in one update of the trace row.
    `seqs AS (
       UPDATE trace SET last_seq = last_seq + ${step} + 3, ended_at = ${at}${carried ? `, records = records + ${carried.step.counted}::int` : ""}
       WHERE id = ${traceId} AND ${moved}
       RETURNING last_seq - ${step} - 3 AS base, last_seq - 3 AS own
     )`,
    ...(carried ? [carried.ctes] : []),
    `ended AS (
       UPDATE span SET status = ${spanStatus}::text::"SpanStatus", ended_at = ${at} FROM seqs WHERE span.id IN (${attemptSpan}, ${rootSpan})
       RETURNING span.*, seqs.own + CASE WHEN span.id = ${attemptSpan} THEN 1 ELSE 2 END AS seq
     )`,
    `span_changes AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT ${traceId}, ended.seq, 'SPAN_ENDED', ended.id,
         jsonb_build_object('status', ended.status::text, 'endedAt', $5::text, 'usage', ended.usage)
           || CASE WHEN ended.cost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cost', trim_scale(ended.cost)::text) END
           || CASE WHEN ended.cost_unpriced THEN '{"costUnpriced": true}'::jsonb ELSE '{}'::jsonb END,
         ${at}
       FROM ended
     )`,
    `trace_ended AS (INSERT INTO trace_change (trace_id, seq, type, at) SELECT ${traceId}, own + 3, 'TRACE_ENDED', ${at} FROM seqs)`,
    `attempt_ended AS (
       UPDATE run_attempt SET ended_at = ${at}, outcome = 'COMPLETED'
       WHERE run_id = ${runId} AND number = ${p(settling.attempt)}::int AND ended_at IS NULL AND ${moved}
     )`,
    `inputs AS (UPDATE run_input SET status = 'RELEASED', released_at = ${at} WHERE run_id = ${runId} AND status = 'PENDING' AND ${moved})`,
    `slot AS (UPDATE conversation SET active_run_id = NULL WHERE id = ${p(run.conversationId)}::text AND active_run_id = ${runId} AND ${moved})`,
  ];
  if (steps.publication) {
    ctes.push(`publication AS (
       INSERT INTO run_publication (run_id, outcome, reason, publication_version_id)
       SELECT ${runId}, ${p(steps.publication.outcome)}::text::"RunPublicationOutcome", ${p(steps.publication.reason)}::text, NULL FROM moved
       ON CONFLICT (run_id) DO UPDATE SET outcome = EXCLUDED.outcome, reason = EXCLUDED.reason, publication_version_id = NULL
     )`);
  }
  if (steps.releaseSpills) {
    ctes.push(`spills AS (UPDATE spill SET released_at = ${at}, item_starts = '{}' WHERE run_id = ${runId} AND released_at IS NULL AND ${moved})`);
  }
  const event = row.webhook === "STATUS" ? endedRunEvent({ ...run, stopReason: stopReasonAfter(row, settling.outcome) }, settling.status, details.at) : null;
  if (event) {
    const [before, between, after] = event.parts;
    ctes.push(`outbox AS (
       INSERT INTO webhook_message (id, webhook_id, event_id, type, body, status, attempts, next_attempt_at, created_at)
       SELECT gen_random_uuid()::text, w.id, ${p(event.eventId)}::text, ${p(event.type)}::text::"WebhookEventType",
         ${p(before)}::text || to_json(moved.cost)::text || ${p(between)}::text || moved.cost_unpriced::text || ${p(after)}::text,
         'PENDING', 0, now(), now()
       FROM webhook w, moved
       WHERE w.owner_id = ${p(event.ownerId)}::text AND w.enabled AND ${p(event.type)}::text::"WebhookEventType" = ANY (w.events)
       RETURNING 1
     )`);
  }
  const sql = `WITH ${ctes.join(",\n")}
    SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT own FROM seqs) AS base, ${carried ? carried.result : "NULL"} AS carried,
      ${event ? "(SELECT count(*) FROM outbox)::int" : "0"} AS webhooks,
      (SELECT json_agg(json_build_object('id', id, 'seq', seq, 'parent_id', parent_id, 'kind', kind::text, 'name', name,
         'attributes', attributes::text, 'usage', usage::text, 'cost', trim_scale(cost)::text, 'cost_unpriced', cost_unpriced,
         'started_at', ${iso("started_at")})) FROM ended) AS spans`;
  const [answer] = (typeof tx === "function" ? await tx(sql, params) : await queryRows(tx, sql, ...params)) as Answered[];
  if (!answer || Number(answer.moved) === 0) return null;
  // Announced first: the carried records' changes come before the settle's.
  if (carried) carry!.settle(answer.carried);
  return appliedOf(row, settling, details, answer);
}

/** What the statement did, as apply-transition.ts reports a transition: its trace changes in the order they were logged. */
function appliedOf(row: Transition, settling: Settling, details: TransitionDetails, answer: Answered): Applied {
  const { run, spans } = settling;
  const at = details.at.toISOString();
  const status = spanStatusOf(settling.outcome);
  const rows = answer.spans ?? [];
  const ended = (span: SpanRef): TraceChange => {
    const found = rows.find((one) => one.id === span.id);
    if (!found) throw new Error(`span ${span.id} does not exist`);
    return endedChange(span, status, found, at);
  };
  const base = Number(answer.base);
  const traceEnded: TraceChange = { traceId: spans.root.traceId, seq: base + 3, type: "TRACE_ENDED", spanId: null, eventId: null, span: null, at };
  const after: Applied["after"] = [];
  if (Number(answer.webhooks) > 0) after.push(() => details.events.publish("webhook:pending", { at: new Date().toISOString() }));
  return {
    runId: run.id,
    ownerId: run.ownerId,
    conversationId: run.conversationId,
    status: settling.status,
    changes: [ended(spans.attempt), ended(spans.root), traceEnded],
    announce: row.announce,
    after,
  };
}
