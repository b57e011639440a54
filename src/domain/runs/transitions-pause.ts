// The rows of the transition table (transitions.ts) for pausing a run (pauseRun) and resuming it
// (resumeRun): the request, its withdrawal, the pause itself at a safe point or at once, and the
// way back to the queue or to waiting.
import type { TransitionRows } from "./transition-row.js";

export const PAUSE_TRANSITIONS = {
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
  // resumeRun: queued again, claimable by any worker; the next attempt goes on from the log. Only
  // with a place in its owner's queue (queue-gate.ts), which pausing a queued run gave up.
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
} as const satisfies TransitionRows<"requestPause" | "withdrawPause" | "pause" | "pauseIdle" | "unpause" | "unpauseWaiting">;
