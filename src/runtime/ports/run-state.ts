// The run-state port: what the worker and the executor need of a run's row (R1, R17–R19) —
// claiming it as a new attempt, keeping its lease, reading its status, settling it, and the
// attempt's own writes to it. Every write of an attempt goes through its fence (ports/attempt-fence.ts).
// The run's life is the domain's (domain/runs): this port names what the runtime may ask of it.
import type {
  AttemptOutcome,
  CancelMode,
  CancelledEnding,
  Claimant,
  ClaimedAttempt,
  ClaimedAttempts,
  EndedRun,
  InstanceLiveness,
  LeaseTerms,
  LeaseVerdict,
  Outcome,
  RunRecord,
  RunStatusName,
  SettleContext,
  SettleStep,
  SpanRef,
} from "../../domain/runs/vocabulary.js";
import type { AttemptFence, Holder, OnLost, Transact } from "./attempt-fence.js";
import type { RunRequests } from "../../domain/runs/run-requests.js";
import type { CarriedRead } from "../../domain/transaction.js";
import type { TokenUsage } from "./model.js";

export type {
  AttemptOutcome,
  CancelMode,
  CancelledEnding,
  Claimant,
  ClaimedAttempt,
  ClaimedAttempts,
  EndedRun,
  InstanceLiveness,
  LeaseTerms,
  LeaseVerdict,
  RunRecord,
  SettleContext,
  SettleStep,
};
export { budgetTokens } from "../../domain/runs/vocabulary.js";

export interface RunState {
  /** Claims the next claimable run (or only `runId`) as a new attempt; null when there is none. */
  claim(claimant: Claimant, runId?: string): Promise<ClaimedAttempt | null>;
  /**
   * Claims up to `count` claimable runs in one transaction, fairly across principals and within
   * their caps; in the claim's order, saying whether the claim found runs waiting (taken or not).
   */
  claimMany(claimant: Claimant, count: number): Promise<ClaimedAttempts>;
  /** The fence of an attempt: `onLost` is called once, when the attempt is found to have lost its run. */
  fence(holder: Holder, onLost: OnLost): AttemptFence;
  /**
   * Extends the leases of the attempts by `leaseMs`, in one statement; for each (in their order),
   * says why not when it no longer holds its run, or null when its run's row was busy (nothing was
   * decided). A lease with less than `marginMs` left is not extended: its attempt has stopped itself
   * by its own clock (a renewal that arrives that late was held on its way). `waiting`: a busy row
   * is waited for, not skipped.
   */
  renewLeases(holders: readonly Holder[], lease: LeaseTerms, waiting?: boolean): Promise<(LeaseVerdict | null)[]>;
  /** Settles the run in the attempt's terminal state, with the settle steps' effects, in the attempt's fence. */
  settle(claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome, steps: readonly SettleStep[]): Promise<RunStatusName>;
  /**
   * A stopping worker, an attempt the database failed, or one whose model endpoint asked to wait,
   * gives the run back for another attempt to resume: at once, or after `delayAfter(n)` ms when
   * the run's n attempts before were handed back too. Resolves with that delay, or null when the
   * attempt had lost its run and handed back nothing; throws when the database fails.
   */
  handBack(claimed: ClaimedAttempt, fence: AttemptFence, reason: string, delayAfter?: (handedBackBefore: number) => number): Promise<number | null>;
  /**
   * Pauses the run at a safe point of its attempt: PAUSED, its lease released, its conversation
   * kept. False when the pause was withdrawn meanwhile (or the attempt lost the run): nothing changed.
   */
  pause(claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean>;
  /**
   * Ends an attempt whose tool calls wait for decisions: the run goes WAITING without a lease;
   * false when every request was decided meanwhile and the run is claimable again at once.
   */
  awaitDecisions(claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean>;
  /** Ends TIMED_OUT the WAITING runs whose deadline passed (as of `now`), with the settle steps of a stopped run. */
  timeOutWaiting(now: Date, steps: readonly SettleStep[]): Promise<EndedRun[]>;
  /** Gives back what a cancelled run's attempt still holds (its lease, its conversation's slot). */
  releaseCancelled(run: RunRecord, ending: CancelledEnding, steps: readonly SettleStep[]): Promise<void>;
  /** Releases the leases of cancelled runs whose attempt's instance is gone or frozen; returns how many. */
  releaseAbandoned(liveness: InstanceLiveness, steps: readonly SettleStep[]): Promise<number>;
  /**
   * Up to `limit` runs to announce: queued, or running under a lease that expired (`leaseMarginMs`
   * ago when it has an owner) — the orphaned, whose worker's attempt died, first; a run handed back
   * or resumed after decisions waits its principal's turn as a queued run does (claim-statement.ts).
   */
  claimable(leaseMarginMs: number, limit: number): Promise<{ id: string; orphaned: boolean }[]>;
  /**
   * The runs among `runIds` (sandbox folders' names), with their owner and when each ended (in a
   * terminal status; null while it is under way: queued, running, waiting, paused); unknown ids are left out.
   */
  lifetimes(runIds: readonly string[]): Promise<{ id: string; ownerId: string; endedAt: Date | null }[]>;
  /** The next queued run of a conversation, which could not start before. */
  nextQueued(conversationId: string): Promise<string | null>;
  /**
   * What was asked of the run while it runs, read before every model request: the stop (cancelRun's
   * mode), if any, whether its owner asked it to pause (pauseRun) at its next safe point, and
   * whether steering inputs (steerRun) wait to be delivered, and the run's cost caps with what was
   * spent against each (domain/costs/caps.ts).
   */
  requests(runId: string): Promise<RunRequests>;
  /** The same read, made as a column of a one-statement write (`read`): `value` once that statement was answered. */
  carriedRequests(runId: string): { read: CarriedRead; value: () => RunRequests | undefined };
  /** Records the model the attempt's requests go to. */
  recordModel(write: Transact, runId: string, label: string): Promise<void>;
  /**
   * Right before a model request: the run's pending steering inputs enter the log through
   * `append` (USER entries), in `write` (the attempt's fence), marked DELIVERED with a STEERED
   * event on `span` — exactly once, or not at all when the attempt lost its run. Returns how many.
   */
  deliverInputs(
    write: Transact,
    delivery: { runId: string; span: SpanRef; append: (write: Transact, texts: string[]) => Promise<{ id: string; content: string }[]> },
  ): Promise<number>;
  /** Counts a model request's tokens against the run's budget; returns the run's total so far. */
  addTokens(write: Transact, runId: string, usage: TokenUsage): Promise<number>;
}
