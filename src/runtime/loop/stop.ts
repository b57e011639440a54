// Why an attempt's signal was aborted. The worker and the fence abort it with a RunStopped; the
// executor reads the reason back to decide how the attempt ends.

import type { StopReason } from "../../domain/runs/vocabulary.js";

export type { StopReason };

const describe: Record<StopReason, string> = {
  CANCELLED: "the run was cancelled",
  TIMED_OUT: "the run reached its deadline",
  HANDED_BACK: "the worker is stopping",
  LEASE_LOST: "the attempt lost its lease",
  PAUSED: "the run was paused",
};

export class RunStopped extends Error {
  override name = "RunStopped";
  constructor(
    readonly status: StopReason,
    detail?: string,
  ) {
    super(detail ? `${describe[status]}: ${detail}` : describe[status]);
  }
}

export const stopReasonOf = (signal: AbortSignal): StopReason => (signal.reason instanceof RunStopped ? signal.reason.status : "HANDED_BACK");

/** How a span ends when its work was stopped: a handed-back attempt's spans are interrupted, not cancelled. */
export const stoppedSpanStatus = (signal: AbortSignal): "INTERRUPTED" | "CANCELLED" =>
  signal.reason instanceof RunStopped && signal.reason.status === "HANDED_BACK" ? "INTERRUPTED" : "CANCELLED";
