// The fence of a run attempt (R18), as the runtime sees it: every write the attempt makes — log
// entries, trace changes, spills, ledger entries, proposals, settling — goes through `write`,
// which checks in the same transaction that the attempt still holds its run. An attempt that was
// taken over or cancelled can write nothing; its first refused write aborts it.
import type { Holder } from "../../domain/research/run-holder.js";
import type { Transact } from "../../domain/transaction.js";
import type { RunStopped, StopReason } from "../loop/stop.js";

export type { Holder, Transact };

/** A write of an attempt that no longer holds its run; nothing of it was applied. */
export class AttemptFencedError extends Error {
  override name = "AttemptFencedError";
  constructor(
    readonly holder: Holder,
    readonly reason: Extract<StopReason, "CANCELLED" | "LEASE_LOST">,
    detail: string,
  ) {
    super(`attempt ${holder.attempt} of run ${holder.runId} may no longer write: ${detail}`);
  }
}

export interface AttemptFence {
  readonly holder: Holder;
  /** A fenced transaction: the one guard every write of the attempt goes through. */
  readonly write: Transact;
  /** Marks the attempt lost (a failed heartbeat, a lost check) and aborts it; never returns. */
  lose(reason: AttemptFencedError["reason"], detail: string): never;
  /** Why the attempt lost its run, once it did. */
  readonly lost: AttemptFencedError | null;
}

/** Called once, when an attempt is found to have lost its run. */
export type OnLost = (stop: RunStopped) => void;
