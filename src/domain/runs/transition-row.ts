// What a row of the run transition table (transitions.ts) says: the transitions' names, and for
// each the statuses it leaves and the one it reaches and everything that goes with it — the lease,
// how the attempt ends, how the spans still open end, what becomes of open approvals and pending
// proposals, the conversation's slot, the webhook event, and what is announced once the
// transaction committed. apply-transition.ts executes a row; the rows themselves live in
// transitions-attempt.ts, transitions-stop.ts and transitions-pause.ts.
import type { AttemptOutcome, RunStatusName, RunStopReason } from "./vocabulary.js";

export type TransitionName =
  | "admit"
  | "claim"
  | "takeOver"
  | "wait"
  | "decidedBeforeWaiting"
  | "resume"
  | "handBack"
  | "settle"
  | "cancel"
  | "timeOutWaiting"
  | "releaseCancelled"
  | "releaseAbandoned"
  | "requestPause"
  | "withdrawPause"
  | "pause"
  | "pauseIdle"
  | "unpause"
  | "unpauseWaiting"
  | "requestStop"
  | "requestConclusionQueued"
  | "requestConclusionPaused"
  | "concludeWaiting"
  | "stopAfterTurn"
  | "conclude"
  | "budgetStop";

/**
 * What is announced after commit: the trace changes (live subscribers, the OTLP exporter), the
 * run's new status (run:changes), the run itself to the workers (it is claimable), and the next
 * queued run of its conversation (the slot is free); STOP: the stop request itself (run:changes
 * with its mode), which the worker executing the run acts on and runEvents shows.
 */
export type Announcement = "TRACE" | "STATUS" | "RUN" | "NEXT_IN_CONVERSATION" | "STOP";

/** How the spans still open end: with which status, the RUN span too or not, and whether the trace ends. */
export type SpanEnding = {
  /** AS_GIVEN: the caller says (a cancelled attempt's own spans end CANCELLED, an abandoned one's INTERRUPTED). */
  status: "INTERRUPTED" | "CANCELLED" | "AS_GIVEN";
  /** Whether the RUN span ends too. */
  root: boolean;
  /** OUTCOME: the attempt's span and the RUN span end as the outcome says (OK, ERROR, CANCELLED). */
  attemptSpans?: "OUTCOME" | "OK";
  trace: "ENDS" | "STAYS";
};

export type Transition = {
  readonly name: TransitionName;
  /** The statuses the run may be in; in any other the transition does not apply and nothing is written. */
  readonly from: readonly RunStatusName[];
  /** The status after; OUTCOME: the terminal status of the attempt's outcome (settle). */
  readonly to: RunStatusName | "OUTCOME";
  /** The lease after: taken by the claimant, released, handed back (expired: claimable at once), or kept. */
  readonly lease: "TAKE" | "RELEASE" | "HAND_BACK" | "KEEP";
  /**
   * The attempt: NEW starts one (and, taking over, ends the one before as its instance's liveness
   * says); an AttemptOutcome ends the attempt that held the run with it; AS_GIVEN ends it as the
   * caller found it (CRASHED or LEASE_LOST); NONE touches no attempt.
   */
  readonly attempt: "NEW" | "NONE" | "AS_GIVEN" | AttemptOutcome;
  readonly openSpans: "KEEP" | SpanEnding;
  /** REJECT: every open approval request is rejected (with the transition's reason), once, here. */
  readonly approvals: "KEEP" | "REJECT";
  /** DROP: pending proposals are dropped; SETTLE_STEPS: the settle steps decide them (and publish, release spills). */
  readonly proposals: "KEEP" | "DROP" | "SETTLE_STEPS";
  /** The conversation's execution slot: taken, kept, given back, or given back unless an attempt still holds the run. */
  readonly slot: "TAKE" | "KEEP" | "RELEASE" | "RELEASE_UNLESS_HELD";
  /**
   * STATUS: the owner's webhooks hear of the new status (an outbox row in the same commit);
   * RUN_RESUMED: they hear that the run was resumed, whatever status it resumes in.
   */
  readonly webhook: "NONE" | "STATUS" | "RUN_RESUMED";
  /** An event on the run's RUN span (when the run has one) that marks the transition in its trace. */
  readonly traceEvent?: "PAUSE_REQUESTED" | "PAUSED" | "RESUMED";
  /**
   * Run.stopReason: a row that ends a run names why (OUTCOME: as the attempt's outcome says,
   * stop-reasons.ts); KEEP: a row that does not end a run, or one of a run already ended.
   */
  readonly stopReason: RunStopReason | "OUTCOME" | "KEEP";
  readonly announce: readonly Announcement[];
};

/**
 * A run that ends SUCCEEDED with the text it has (CONCLUDE taken, a cost cap reached): the last
 * request's answer or the text so far is published like any answer; the rows differ by their reason.

/** Rows of the table, each under its own name: the row files declare theirs with it, the table all of them. */
export type TransitionRows<Names extends TransitionName> = { [Name in Names]: Transition & { name: Name } };

/** Whether a run in `status` may take the transition. */
export const leaves = (transition: Transition, status: RunStatusName): boolean => transition.from.includes(status);
