// What a transition (apply-transition.ts) writes to the run's trace: the spans still open ended as
// its row says (a settled run's own RUN and ATTEMPT spans as its outcome says), the trace's end,
// and the events it marks on the run's RUN span.
import { endSpanStatement, endTraceStatement } from "../trace/span-statements.js";
import { appendEventIn, changeSpanIn, endOpenSpansIn, ensureTrace, type TraceChange } from "../trace/trace-writes.js";
import type { Tx } from "../transaction.js";
import type { SpanEnding } from "./transition-row.js";
import type { Outcome, SpanRef, StopRequest } from "./vocabulary.js";

/** What of a transition's details (apply-transition.ts) its trace writes read. */
type TransitionDetails = {
  at: Date;
  reason: string;
  outcome?: Outcome;
  spans?: { root: SpanRef; attempt: SpanRef };
  spanStatus?: "INTERRUPTED" | "CANCELLED";
};

/** The run's RUN span, its first; none for a run never claimed. */
const runSpanOf = (tx: Tx, runId: string): Promise<SpanRef | null> =>
  tx.span.findFirst({ where: { traceId: runId, kind: "RUN" }, orderBy: { startedAt: "asc" }, select: { id: true, traceId: true } });

/** The stop request's event on the run's RUN span (none yet for a run never claimed: its attempt records it when it acts on it). */
export async function stopRequestedEvent(tx: Tx, runId: string, stop: StopRequest): Promise<TraceChange | null> {
  const root = await runSpanOf(tx, runId);
  if (!root) return null;
  return appendEventIn(tx, root, {
    kind: "STOP_REQUESTED",
    payload: { mode: stop.mode, requestedBy: stop.by, requestedAt: stop.at.toISOString() },
    at: stop.at,
  });
}

/** A settled run's own spans: an interrupted run that settles was stopped for good (cancelled, timed out). */
const spanStatusOf = (outcome: Outcome | undefined): "OK" | "ERROR" | "CANCELLED" =>
  outcome?.type === "failed" ? "ERROR" : outcome?.type === "interrupted" ? "CANCELLED" : "OK";

/** Ends the spans still open as the row says; the trace too when it ends (created if the run never started, so it can end). */
export async function endSpans(tx: Tx, ending: SpanEnding, runId: string, details: TransitionDetails): Promise<(TraceChange | null)[]> {
  const { at, reason, spans } = details;
  const own = ending.attemptSpans && spans ? spans : null;
  const traceId = spans?.root.traceId ?? (ending.trace === "ENDS" ? await ensureTrace(tx, runId) : runId);
  const spanStatus = ending.status === "AS_GIVEN" ? (details.spanStatus ?? "INTERRUPTED") : ending.status;
  const changes: (TraceChange | null)[] = await endOpenSpansIn(tx, {
    traceId,
    status: spanStatus,
    reason: own ? `still open when the run ${ending.attemptSpans === "OUTCOME" ? "ended" : "began to wait"}` : reason,
    includeRoot: ending.root && !own,
    except: own ? [own.attempt.id, own.root.id] : [],
    at,
  });
  if (own && ending.attemptSpans === "OUTCOME") {
    // A span whose end only sets its status ends in one statement (the settle of every run that did not fail).
    const failure = details.outcome?.type === "failed" ? { failureReason: details.outcome.reason, error: details.outcome.message } : null;
    const end = async (span: SpanRef) =>
      failure
        ? changeSpanIn(tx, span, { status: spanStatusOf(details.outcome), attributes: failure, at })
        : ((await endSpanStatement(tx, span, { status: spanStatusOf(details.outcome), at }, undefined)) ?? missing(span));
    changes.push(await end(own.attempt), await end(own.root));
  }
  if (own && ending.attemptSpans === "OK") {
    const waiting = await tx.toolApproval.count({ where: { runId, decision: null } });
    changes.push(await changeSpanIn(tx, own.attempt, { status: "OK", attributes: { "dossier.waitingForDecisions": waiting }, at }));
  }
  if (ending.trace === "ENDS") changes.push(await endTraceStatement(tx, traceId, at));
  return changes;
}

const missing = (span: SpanRef): never => {
  throw new Error(`span ${span.id} does not exist`);
};

/** Marks the transition on the run's RUN span; a run that never started has none, and nothing is written. */
export async function markRunSpan(
  tx: Tx,
  runId: string,
  kind: "PAUSE_REQUESTED" | "PAUSED" | "RESUMED",
  details: TransitionDetails,
): Promise<TraceChange | null> {
  const root = await runSpanOf(tx, runId);
  return root ? appendEventIn(tx, root, { kind, payload: details.reason, at: details.at }) : null;
}
