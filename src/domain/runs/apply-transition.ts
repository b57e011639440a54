// Executes one row of the transition table (transitions.ts) in the caller's transaction. The row
// says what happens; this says how, once for every transition: the run row's conditional UPDATE
// (only from the row's statuses), the attempt's end, the open spans and the trace, the open
// approvals, the pending proposals (or the settle steps), the conversation's slot and the
// webhook event. Nothing is announced here: what the row announces is collected in the result and
// announced by `announceApplied` once the caller's transaction committed (lock-order.ts says in
// which order the transaction must have locked the run row and its workspace).
import { type EventPublisher, publishRunListChange, publishRunStatus, type RunStatusName } from "../../events/topics.js";
import type { AfterCommit } from "../after-commit.js";
import { runAfterCommit } from "../after-commit.js";
import { toStored } from "../text/stored-text.js";
import type { TraceChange } from "../trace/trace-writes.js";
import { endSpans, markRunSpan, stopRequestedEvent } from "./transition-spans.js";
import type { Tx } from "../transaction.js";
import { recordRunEvent } from "../webhooks/webhook-events.js";
import { rejectOpenIn } from "./approval-decisions.js";
import { releaseInputsIn } from "./steering.js";
import { isTerminal, stopReasonAfter, TERMINAL_STATUSES } from "./stop-reasons.js";
import type { Announcement, Transition } from "./transition-row.js";
import type { AttemptOutcome, CancelMode, Outcome, RunRecord, SettleStep, SpanRef, StopRequest } from "./vocabulary.js";

/** The run a transition applies to: enough of its row to write the side effects. */
export type TransitionRun = Pick<RunRecord, "id" | "ownerId" | "conversationId" | "workspaceId"> & Partial<RunRecord>;

export type TransitionDetails = {
  at: Date;
  /** Why the spans still open end (and why open approval requests are rejected, unless `decisionReason` says). */
  reason: string;
  decisionReason?: string;
  /** What the attempt ended with (settle), or the stop the settle steps of a stopped run see. */
  outcome?: Outcome;
  /** The attempt the transition ends: its number, how it ended (AS_GIVEN rows) and who held it. */
  attempt?: { number: number; outcome?: AttemptOutcome; owner?: string; expiredOnly?: boolean };
  /** The RUN span and the attempt's span, for rows whose attempt spans end as the outcome says. */
  spans?: { root: SpanRef; attempt: SpanRef };
  /** How open spans end on AS_GIVEN rows. */
  spanStatus?: "INTERRUPTED" | "CANCELLED";
  /** The settle steps (rows whose proposals are SETTLE_STEPS). */
  steps?: readonly SettleStep[];
  /** Resuming a paused run: its deadline moved on by the time it was paused, and when it paused (unchanged since it was read). */
  unpaused?: { deadlineAt: Date; pausedAt: Date };
  /** A stop request (cancelRun) the transition records on the run, with an event on its RUN span. */
  stop?: StopRequest;
  /** The text streamed when the run was stopped NOW (releaseCancelled): kept as its partial answer. */
  partialAnswer?: string;
  events: EventPublisher;
};

/** What a transition did, and what it announces after commit. */
export type Applied = {
  runId: string;
  /** The run's owner, whose live run lists hear of the change. */
  ownerId: string;
  conversationId: string;
  status: RunStatusName;
  changes: (TraceChange | null)[];
  announce: readonly Announcement[];
  /** The stop request the transition recorded (announced by STOP). */
  stop?: CancelMode;
  /** The settle steps' and the webhook outbox's own after-commit work. */
  after: AfterCommit;
};

/** The status a row leads to (OUTCOME: the attempt's terminal status). */
export function statusAfter(row: Transition, outcome?: Outcome): RunStatusName {
  if (row.to !== "OUTCOME") return row.to;
  if (!outcome) throw new Error(`${row.name} needs the attempt's outcome`);
  switch (outcome.type) {
    case "final":
      return "SUCCEEDED";
    case "failed":
      return "FAILED";
    case "interrupted":
      return outcome.status === "TIMED_OUT" || outcome.status === "CANCELLED" ? outcome.status : "FAILED";
    case "waiting":
      // A waiting run is not settled: it takes the wait transition.
      throw new Error("a run waiting for decisions is not settled");
    default: {
      const unknown: never = outcome;
      throw new Error(`unknown outcome ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * Applies `row` to `run` in `tx`; null when the run was no longer in one of the row's statuses
 * (or no longer held as the details say), and nothing was written.
 */
export async function applyTransition(tx: Tx, row: Transition, run: TransitionRun, details: TransitionDetails): Promise<Applied | null> {
  const status = statusAfter(row, details.outcome);
  const moved = await moveRun(tx, row, run, details, status);
  if (!moved) return null;
  const after: AfterCommit = [];
  const changes: (TraceChange | null)[] = [];
  // Open requests are rejected once, here, before anything else of the run's end sees them.
  if (details.stop) changes.push(await stopRequestedEvent(tx, run.id, details.stop));
  if (row.approvals === "REJECT") changes.push(...(await rejectOpenIn(tx, run.id, details.decisionReason ?? details.reason, details.at)));
  if (row.proposals === "SETTLE_STEPS") {
    const outcome = details.outcome ?? stoppedAs(status);
    for (const step of details.steps ?? []) await step({ tx, run: run as RunRecord, outcome, status, at: details.at, after });
  }
  if (row.proposals === "DROP") await dropPendingProposals(tx, run.id, details.at);
  // Whichever row ends the run, its steering inputs still pending will never enter the log.
  if (isTerminal(status) && !row.from.includes(status)) await releaseInputsIn(tx, run.id, details.at);
  if (row.openSpans !== "KEEP") changes.push(...(await endSpans(tx, row.openSpans, run.id, details)));
  const ended = attemptOutcomeOf(row, details);
  if (ended && details.attempt) await endAttemptRow(tx, run.id, details.attempt.number, ended, details.at);
  if (row.slot === "TAKE") await takeSlot(tx, run);
  if (row.slot === "RELEASE" || (row.slot === "RELEASE_UNLESS_HELD" && moved.leaseOwner === null)) await releaseSlot(tx, run);
  if (row.webhook === "STATUS") {
    const failureReason = details.outcome?.type === "failed" ? details.outcome.reason : null;
    await recordRunEvent(
      tx,
      { ...run, failureReason, stopReason: stopReasonAfter(row, details.outcome) },
      status,
      { events: details.events, after },
      undefined,
      details.at,
    );
  }
  if (row.webhook === "RUN_RESUMED") await recordRunEvent(tx, run, status, { events: details.events, after }, "RUN_RESUMED", details.at);
  if (row.traceEvent) changes.push(await markRunSpan(tx, run.id, row.traceEvent, details));
  const announce = row.slot === "RELEASE_UNLESS_HELD" && moved.leaseOwner !== null ? row.announce.filter((a) => a !== "NEXT_IN_CONVERSATION") : row.announce;
  return { runId: run.id, ownerId: run.ownerId, conversationId: run.conversationId, status, changes, announce, after, stop: details.stop?.mode };
}

/** What announces an applied transition once its transaction committed. */
export type Announcers = {
  events: EventPublisher;
  /** Committed trace changes to live subscribers (and ended spans to the OTLP exporter). */
  trace: (changes: readonly (TraceChange | null)[]) => void;
  /** Claimable runs to the workers (RUN, NEXT_IN_CONVERSATION); without it the caller announces them. */
  runs?: (runIds: string[]) => void;
  /** The conversation's next queued run, for NEXT_IN_CONVERSATION. */
  nextQueued?: (conversationId: string) => Promise<string | null>;
};

/** Announces what `applied` says, after commit: never call it inside the transaction. */
export function announceApplied(announcers: Announcers, applied: Applied): void {
  runAfterCommit(applied.after);
  // Every applied row wrote the run row, which the run-list log recorded in the same commit.
  publishRunListChange(announcers.events, applied.ownerId);
  for (const announcement of applied.announce) {
    switch (announcement) {
      case "TRACE":
        announcers.trace(applied.changes);
        break;
      case "STATUS":
        publishRunStatus(announcers.events, applied.runId, applied.status);
        break;
      case "RUN":
        announcers.runs?.([applied.runId]);
        break;
      case "STOP":
        if (applied.stop) publishRunStatus(announcers.events, applied.runId, applied.status, applied.stop);
        break;
      case "NEXT_IN_CONVERSATION": {
        const { runs, nextQueued } = announcers;
        if (runs && nextQueued)
          void nextQueued(applied.conversationId).then(
            (next) => next && runs([next]),
            () => undefined,
          );
        break;
      }
      default: {
        const unknown: never = announcement;
        throw new Error(`unknown announcement ${String(unknown)}`);
      }
    }
  }
}

/**
 * The run row's conditional UPDATE: only from the row's statuses (and, for the rows that say so,
 * only while the holder the details name still holds it). Returns who held the lease, or null
 * when nothing matched.
 */
async function moveRun(
  tx: Tx,
  row: Transition,
  run: TransitionRun,
  details: TransitionDetails,
  status: RunStatusName,
): Promise<{ leaseOwner: string | null } | null> {
  const where: Record<string, unknown> = { id: run.id, status: { in: [...row.from] } };
  const data: Record<string, unknown> = { ...leaseAfter(row.lease), ...(row.to === status && row.from.includes(status) ? {} : { status }) };
  const terminal = (TERMINAL_STATUSES as readonly string[]).includes(status);
  if (terminal && !row.from.includes(status)) data.finishedAt = details.at;
  const stopReason = stopReasonAfter(row, details.outcome);
  if (stopReason) data.stopReason = stopReason;
  if (details.stop) Object.assign(data, { stopMode: details.stop.mode, stopRequestedAt: details.stop.at, stopRequestedBy: details.stop.by });
  switch (row.name) {
    case "admit":
    case "claim":
    case "takeOver":
      // The admission statement inserted the row, the claim statement (claim.ts) took it.
      return { leaseOwner: run.leaseOwner ?? null };
    case "settle": {
      const outcome = details.outcome;
      data.answer = outcome?.type === "final" ? toStored(outcome.answer) : null;
      data.failureReason = outcome?.type === "failed" ? outcome.reason : null;
      break;
    }
    case "conclude": {
      // The last request's answer: complete, and concluded early.
      const outcome = details.outcome;
      data.answer = outcome?.type === "final" ? toStored(outcome.answer) : null;
      data.concludedEarly = true;
      break;
    }
    case "budgetStop": {
      // The text the run had when a cost cap stopped it: kept, never a complete reply.
      const outcome = details.outcome;
      const text = outcome?.type === "final" ? outcome.answer : "";
      Object.assign(data, text ? { answer: toStored(text), answerPartial: true } : { answer: null });
      break;
    }
    case "requestStop":
    case "requestConclusionQueued":
    case "requestConclusionPaused":
    case "concludeWaiting":
      // Every stop is final: only a run no stop was requested of records one (NOW, the cancel row, escalates).
      where.stopMode = null;
      break;
    case "resume":
      // Only once none of the run's requests waits any more.
      where.approvals = { none: { decision: null } };
      break;
    case "releaseCancelled":
    case "releaseAbandoned":
      where.attempt = details.attempt?.number;
      where.leaseOwner = details.attempt?.owner;
      if (details.attempt?.expiredOnly) where.leaseExpiresAt = { lt: new Date() };
      // A run stopped NOW keeps what its model had streamed: not a complete reply.
      if (details.partialAnswer) Object.assign(data, { answer: toStored(details.partialAnswer), answerPartial: true });
      break;
    case "requestPause":
      where.pauseRequestedAt = null;
      data.pauseRequestedAt = details.at;
      break;
    case "withdrawPause":
      where.pauseRequestedAt = { not: null };
      data.pauseRequestedAt = null;
      break;
    case "pause":
      // Only the attempt that holds the run, and only while the pause is still asked for.
      where.attempt = details.attempt?.number;
      where.pauseRequestedAt = { not: null };
      Object.assign(data, { pausedAt: details.at, pauseRequestedAt: null });
      break;
    case "pauseIdle":
      Object.assign(data, { pausedAt: details.at, pauseRequestedAt: null });
      break;
    case "unpause":
    case "unpauseWaiting": {
      if (!details.unpaused) throw new Error(`${row.name} needs the run's moved deadline`);
      where.pausedAt = details.unpaused.pausedAt;
      where.approvals = row.name === "unpause" ? { none: { decision: null } } : { some: { decision: null } };
      Object.assign(data, { pausedAt: null, deadlineAt: details.unpaused.deadlineAt });
      break;
    }
    case "wait":
    case "decidedBeforeWaiting":
    case "handBack":
    case "cancel":
    case "timeOutWaiting":
    case "stopAfterTurn":
      break;
    default: {
      const unknown: never = row.name;
      throw new Error(`unknown transition ${String(unknown)}`);
    }
  }
  const moved = await tx.run.updateMany({ where, data });
  if (moved.count === 0) return null;
  // Only cancellation keeps the lease, and it asks who holds it: read after the UPDATE, which locked the row.
  if (row.slot !== "RELEASE_UNLESS_HELD") return { leaseOwner: null };
  return tx.run.findUniqueOrThrow({ where: { id: run.id }, select: { leaseOwner: true } });
}

function leaseAfter(lease: Transition["lease"]): Record<string, unknown> {
  switch (lease) {
    case "RELEASE":
      return { leaseOwner: null, leaseExpiresAt: null };
    case "HAND_BACK":
      // No worker, an expired lease: the next claim resumes it.
      return { leaseOwner: null, leaseExpiresAt: new Date(0) };
    case "TAKE":
    case "KEEP":
      return {};
    default: {
      const unknown: never = lease;
      throw new Error(`unknown lease ${String(unknown)}`);
    }
  }
}

/** The outcome the settle steps of a run stopped outside an attempt see. */
const stoppedAs = (status: RunStatusName): Outcome => ({ type: "interrupted", status: status === "TIMED_OUT" ? "TIMED_OUT" : "CANCELLED" });

function attemptOutcomeOf(row: Transition, details: TransitionDetails): AttemptOutcome | null {
  if (row.attempt === "NONE") return null;
  // NEW: the attempt before, if the details name one, ends as its instance's liveness said.
  if (row.attempt === "AS_GIVEN" || row.attempt === "NEW") return details.attempt?.outcome ?? null;
  return row.attempt;
}

async function endAttemptRow(tx: Tx, runId: string, number: number, outcome: AttemptOutcome, at: Date): Promise<void> {
  await tx.runAttempt.updateMany({ where: { runId, number, endedAt: null }, data: { endedAt: at, outcome } });
}

/** A run that stopped applies no proposal: its pending ones are decided now. */
async function dropPendingProposals(tx: Tx, runId: string, at: Date): Promise<void> {
  await tx.checkpointProposal.updateMany({ where: { runId, status: "PENDING" }, data: { status: "DROPPED", reason: "the run was cancelled", decidedAt: at } });
}

/** Another run of the conversation was claimed concurrently: the claim is undone. */
export class SlotTaken extends Error {
  /** The runs of a claim whose conversations' slots were taken (none: the run the transition applied to). */
  constructor(readonly runIds: readonly string[] = []) {
    super("the conversation's execution slot was taken by another run");
  }
}

/** Takes the conversation's execution slot for the run, or throws SlotTaken (the caller's transaction rolls back). */
async function takeSlot(tx: Tx, run: Pick<RunRecord, "id" | "conversationId">): Promise<void> {
  const slot = await tx.conversation.updateMany({
    where: { id: run.conversationId, OR: [{ activeRunId: null }, { activeRunId: run.id }] },
    data: { activeRunId: run.id },
  });
  if (slot.count === 0) throw new SlotTaken();
}

/** Gives the conversation's execution slot back, so its next queued run may be claimed. */
export async function releaseSlot(tx: Tx, run: Pick<RunRecord, "id" | "conversationId">): Promise<void> {
  await tx.conversation.updateMany({ where: { id: run.conversationId, activeRunId: run.id }, data: { activeRunId: null } });
}
