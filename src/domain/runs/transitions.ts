// A run's life as data (R1, R17–R19): one row per transition, naming the statuses it leaves and
// the one it reaches and everything that goes with it — the lease, how the attempt ends, how the
// spans still open end, what becomes of open approvals and pending proposals, the conversation's
// slot, the webhook event, and what is announced once the transaction committed. One function
// (apply-transition.ts) executes a row in the caller's transaction; nothing else writes a run's
// status. A new capability that changes a run's state (stop modes, pause, steering, spend caps,
// schedules) is a new row here, not a new list of side effects somewhere else. One effect goes
// with the status itself rather than a column: every row that reaches a terminal status releases
// the run's pending steering inputs (steering.ts), so no row can end a run and leave one pending.
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
 */
const ENDS_WITH_ITS_TEXT = {
  from: ["RUNNING"],
  to: "SUCCEEDED",
  lease: "RELEASE",
  attempt: "COMPLETED",
  openSpans: { status: "INTERRUPTED", root: true, attemptSpans: "OUTCOME", trace: "ENDS" },
  approvals: "REJECT",
  proposals: "SETTLE_STEPS",
  slot: "RELEASE",
  webhook: "STATUS",
  announce: ["TRACE", "STATUS", "NEXT_IN_CONVERSATION"],
} as const satisfies Omit<Transition, "name" | "stopReason">;

export const TRANSITIONS = {
  // Admission inserts the run QUEUED in its one statement (admit-in-one-statement.ts) or transaction.
  admit: {
    name: "admit",
    from: [],
    to: "QUEUED",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["RUN"],
  },
  // The claim statement (claim.ts) chooses the run and takes it; the question enters the log.
  claim: {
    name: "claim",
    from: ["QUEUED"],
    to: "RUNNING",
    lease: "TAKE",
    attempt: "NEW",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "TAKE",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS"],
  },
  // A running run whose lease expired (or was handed back): the attempt before it is ended.
  takeOver: {
    name: "takeOver",
    from: ["RUNNING"],
    to: "RUNNING",
    lease: "TAKE",
    attempt: "NEW",
    openSpans: { status: "INTERRUPTED", root: false, trace: "STAYS" },
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "TAKE",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS"],
  },
  // Calls of the attempt wait for decisions: no lease, the slot kept.
  wait: {
    name: "wait",
    from: ["RUNNING"],
    to: "WAITING",
    lease: "RELEASE",
    attempt: "HANDED_BACK",
    openSpans: { status: "INTERRUPTED", root: false, attemptSpans: "OK", trace: "STAYS" },
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "STATUS",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS"],
  },
  // Every request was decided while the step still ran: the attempt ends, the run is claimable at once.
  decidedBeforeWaiting: {
    name: "decidedBeforeWaiting",
    from: ["RUNNING"],
    to: "RUNNING",
    lease: "HAND_BACK",
    attempt: "HANDED_BACK",
    openSpans: { status: "INTERRUPTED", root: false, attemptSpans: "OK", trace: "STAYS" },
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "RUN"],
  },
  // Every request decided: claimable again, as a handed-back run is.
  resume: {
    name: "resume",
    from: ["WAITING"],
    to: "RUNNING",
    lease: "HAND_BACK",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["STATUS", "RUN"],
  },
  // A stopping worker gives the run back; it resumes before anything queued after it.
  handBack: {
    name: "handBack",
    from: ["RUNNING"],
    to: "RUNNING",
    lease: "HAND_BACK",
    attempt: "HANDED_BACK",
    openSpans: { status: "INTERRUPTED", root: false, trace: "STAYS" },
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "RUN"],
  },
  // The attempt ends the run: SUCCEEDED, FAILED, or stopped for good (CANCELLED, TIMED_OUT).
  settle: {
    name: "settle",
    from: ["RUNNING"],
    to: "OUTCOME",
    lease: "RELEASE",
    attempt: "COMPLETED",
    openSpans: { status: "INTERRUPTED", root: true, attemptSpans: "OUTCOME", trace: "ENDS" },
    approvals: "REJECT",
    proposals: "SETTLE_STEPS",
    slot: "RELEASE",
    webhook: "STATUS",
    stopReason: "OUTCOME",
    announce: ["TRACE", "STATUS", "NEXT_IN_CONVERSATION"],
  },
  // Final the moment it commits; an attempt still holding the run keeps lease and slot until it stops.
  cancel: {
    name: "cancel",
    from: ["QUEUED", "RUNNING", "WAITING", "PAUSED"],
    to: "CANCELLED",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: { status: "CANCELLED", root: true, trace: "ENDS" },
    approvals: "REJECT",
    proposals: "DROP",
    slot: "RELEASE_UNLESS_HELD",
    webhook: "STATUS",
    stopReason: "CANCELLED",
    announce: ["TRACE", "STATUS", "NEXT_IN_CONVERSATION"],
  },
  // The sweep ends a WAITING run past its deadline, as an attempt would settle it.
  timeOutWaiting: {
    name: "timeOutWaiting",
    from: ["WAITING"],
    to: "TIMED_OUT",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: { status: "CANCELLED", root: true, trace: "ENDS" },
    approvals: "REJECT",
    proposals: "SETTLE_STEPS",
    slot: "RELEASE",
    webhook: "STATUS",
    stopReason: "DEADLINE",
    announce: ["TRACE", "STATUS", "NEXT_IN_CONVERSATION"],
  },
  // A cancelled run's attempt stopped: it gives back its lease and the slot.
  releaseCancelled: {
    name: "releaseCancelled",
    from: ["CANCELLED"],
    to: "CANCELLED",
    lease: "RELEASE",
    attempt: "COMPLETED",
    openSpans: { status: "AS_GIVEN", root: true, trace: "ENDS" },
    approvals: "REJECT",
    proposals: "SETTLE_STEPS",
    slot: "RELEASE",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "NEXT_IN_CONVERSATION"],
  },
  // A cancelled run whose attempt's instance is gone or frozen: the sweep gives back what it held.
  releaseAbandoned: {
    name: "releaseAbandoned",
    from: ["CANCELLED"],
    to: "CANCELLED",
    lease: "RELEASE",
    attempt: "AS_GIVEN",
    openSpans: { status: "AS_GIVEN", root: true, trace: "ENDS" },
    approvals: "REJECT",
    proposals: "SETTLE_STEPS",
    slot: "RELEASE",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "NEXT_IN_CONVERSATION"],
  },
  // Pause (pauseRun): a running run is asked to pause, durably; its attempt pauses it at the next
  // safe point (pause). A queued or waiting run, which no attempt holds, pauses at once (pauseIdle).
  requestPause: {
    name: "requestPause",
    from: ["RUNNING"],
    to: "RUNNING",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    traceEvent: "PAUSE_REQUESTED",
    stopReason: "KEEP",
    announce: ["TRACE"],
  },
  // resumeRun before the attempt reached its safe point: the request is withdrawn, the run goes on.
  withdrawPause: {
    name: "withdrawPause",
    from: ["RUNNING"],
    to: "RUNNING",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    traceEvent: "RESUMED",
    stopReason: "KEEP",
    announce: ["TRACE"],
  },
  // The attempt reached a safe point with a pause requested: it lets go of the run (and its
  // worker slot); the conversation stays the run's, and its time limit stands still.
  pause: {
    name: "pause",
    from: ["RUNNING"],
    to: "PAUSED",
    lease: "RELEASE",
    attempt: "HANDED_BACK",
    openSpans: { status: "INTERRUPTED", root: false, trace: "STAYS" },
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "STATUS",
    traceEvent: "PAUSED",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS"],
  },
  // A queued run (not claimable while paused) or a waiting one (decisions made meanwhile are kept).
  pauseIdle: {
    name: "pauseIdle",
    from: ["QUEUED", "WAITING"],
    to: "PAUSED",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "STATUS",
    traceEvent: "PAUSED",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS"],
  },
  // resumeRun: queued again, claimable by any worker; the next attempt goes on from the log.
  unpause: {
    name: "unpause",
    from: ["PAUSED"],
    to: "QUEUED",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "RUN_RESUMED",
    traceEvent: "RESUMED",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS", "RUN"],
  },
  // resumeRun on a run paused while its calls waited and some still wait: it waits again.
  unpauseWaiting: {
    name: "unpauseWaiting",
    from: ["PAUSED"],
    to: "WAITING",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "RUN_RESUMED",
    traceEvent: "RESUMED",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS"],
  },
  // Stop modes (cancelRun). NOW is the cancel row (the stop request recorded with it) and, once
  // the attempt has stopped, releaseCancelled keeping the text streamed so far as the answer.
  // AFTER_TURN and CONCLUDE on a running run are recorded and announced; the attempt acts on them.
  requestStop: {
    name: "requestStop",
    from: ["RUNNING"],
    to: "RUNNING",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "STOP"],
  },
  // CONCLUDE on a queued run: it stays queued; once claimed it makes only the concluding request.
  requestConclusionQueued: {
    name: "requestConclusionQueued",
    from: ["QUEUED"],
    to: "QUEUED",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["STOP"],
  },
  // CONCLUDE on a paused run: it stays paused; once resumed and claimed it makes only the concluding request.
  requestConclusionPaused: {
    name: "requestConclusionPaused",
    from: ["PAUSED"],
    to: "PAUSED",
    lease: "KEEP",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "KEEP",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["STOP"],
  },
  // CONCLUDE on a run waiting for decisions: its held calls are rejected and it is claimable at
  // once, as a decided run is; the next attempt concludes.
  concludeWaiting: {
    name: "concludeWaiting",
    from: ["WAITING"],
    to: "RUNNING",
    lease: "HAND_BACK",
    attempt: "NONE",
    openSpans: "KEEP",
    approvals: "REJECT",
    proposals: "KEEP",
    slot: "KEEP",
    webhook: "NONE",
    stopReason: "KEEP",
    announce: ["TRACE", "STATUS", "RUN", "STOP"],
  },
  // AFTER_TURN taken: the turn's tool calls finished and are logged; the run ends before its next
  // model request, CANCELLED, as an attempt settles it (the settle steps of a stopped run run).
  stopAfterTurn: {
    name: "stopAfterTurn",
    from: ["RUNNING"],
    to: "CANCELLED",
    lease: "RELEASE",
    attempt: "COMPLETED",
    openSpans: { status: "INTERRUPTED", root: true, attemptSpans: "OUTCOME", trace: "ENDS" },
    approvals: "REJECT",
    proposals: "SETTLE_STEPS",
    slot: "RELEASE",
    webhook: "STATUS",
    stopReason: "STOPPED_AFTER_TURN",
    announce: ["TRACE", "STATUS", "NEXT_IN_CONVERSATION"],
  },
  // CONCLUDE taken: the last request's answer settles the run SUCCEEDED, published like any answer.
  conclude: { name: "conclude", ...ENDS_WITH_ITS_TEXT, stopReason: "CONCLUDED" },
  // A cost cap reached before a model request (maxCost, the daily limit, the monthly budget, or a
  // cost confirmation refused): the run ends SUCCEEDED with the text it has so far as a partial
  // answer (answerComplete false), published like any answer, stopReason BUDGET.
  budgetStop: { name: "budgetStop", ...ENDS_WITH_ITS_TEXT, stopReason: "BUDGET" },
} as const satisfies { [Name in TransitionName]: Transition & { name: Name } };

/** Whether a run in `status` may take the transition. */
export const leaves = (transition: Transition, status: RunStatusName): boolean => transition.from.includes(status);
