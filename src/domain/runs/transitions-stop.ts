// The rows of the transition table (transitions.ts) that stop a run before its attempt would have
// ended it: cancelling it (and giving back what a cancelled run's attempt held), the deadline of a
// waiting run, and the stop modes of cancelRun (AFTER_TURN, CONCLUDE) and the cost caps.
import type { Transition, TransitionRows } from "./transition-row.js";

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

export const STOP_TRANSITIONS = {
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
} as const satisfies TransitionRows<
  | "cancel"
  | "timeOutWaiting"
  | "releaseCancelled"
  | "releaseAbandoned"
  | "requestStop"
  | "requestConclusionQueued"
  | "requestConclusionPaused"
  | "concludeWaiting"
  | "stopAfterTurn"
  | "conclude"
  | "budgetStop"
>;
