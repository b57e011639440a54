// The run-state port: what the worker and the executor need of a run's row (R1, R17–R19) —
// claiming it as a new attempt, keeping its lease, reading its status, settling it, and the
// attempt's own writes to it. Every write of an attempt goes through its fence (ports/attempt-fence.ts).
import type { RunStatusName } from "../../events/topics.js";
import type { AfterCommit } from "../../domain/after-commit.js";
import type { Tx } from "../../domain/transaction.js";
import type { SpanRef } from "./trace-sink.js";
import type { AttemptFence, Holder, OnLost, Transact } from "./attempt-fence.js";
import type { Outcome } from "../loop/outcome.js";
import type { TokenUsage } from "./model.js";

/** A run as admitted and as its attempts left it: the row the worker claims and the loop executes. */
export type RunRecord = {
  id: string;
  ownerId: string;
  conversationId: string;
  workspaceId: string | null;
  agent: string;
  question: string;
  status: RunStatusName;
  maxTurns: number;
  tokenBudget: number;
  deadlineSeconds: number;
  deadlineAt: Date;
  goalVersionId: string | null;
  goalVersionNo: number | null;
  goalStatement: string | null;
  agentProfileId: string | null;
  answer: string | null;
  failureReason: string | null;
  createdAt: Date;
  startedAt: Date | null;
  leaseOwner: string | null;
  attempt: number;
  modelLabel: string | null;
  tokensUsed: number;
  checkpointRevisionSeen: number | null;
};

/** How an attempt ended (R18): the run settled in it, it was handed back, its lease was lost, or its instance died. */
export type AttemptOutcome = "COMPLETED" | "HANDED_BACK" | "LEASE_LOST" | "CRASHED";

/** Whether an instance still has a database session: tells a crashed attempt from one that lost its lease. */
export type InstanceLiveness = (instance: string) => Promise<boolean>;

/** One claim of a run: the run as claimed, the attempt's number, the RUN span and the attempt's span. */
/**
 * `leaseSentAt`: this process's monotonic time (performance.now()) just before the statement that
 * set the lease was sent — the start of the attempt's own clock (attempt/own-clock.ts).
 */
export type ClaimedAttempt = { run: RunRecord; number: number; root: SpanRef; span: SpanRef; leaseSentAt?: number };

export type SettleContext = {
  tx: Tx;
  run: RunRecord;
  outcome: Outcome;
  status: RunStatusName;
  /** What to announce once the settle transaction committed. */
  after: AfterCommit;
};

/** A part of settling owned by another part of the runtime; it writes only through `tx`. */
export type SettleStep = (context: SettleContext) => Promise<void>;

/** How a cancelled run's attempt ends when what it still holds is given back. */
export type CancelledEnding = {
  attempt: number;
  owner: string;
  outcome: AttemptOutcome;
  spanStatus: "CANCELLED" | "INTERRUPTED";
  reason: string;
  /** Only when the lease has expired (the sweep: the attempt may still be stopping). */
  expiredOnly?: boolean;
};

/** Who claims: the lease owner, how long a lease lasts, and how a new run's RUN span is described. */
export type Claimant = {
  workerId: string;
  leaseMs: number;
  /** A run whose lease has an owner is taken over only this long after the lease expired (see attempt/own-clock.ts). */
  leaseMarginMs: number;
  liveness: InstanceLiveness;
  describeRun: (run: RunRecord) => { name: string; attributes: Record<string, unknown> };
};

/** A run ended outside any attempt (a WAITING run past its deadline): its conversation's next run may start. */
export type EndedRun = { id: string; conversationId: string };

/** A lease the heartbeat found gone: cancelled under this attempt, or taken over (or the heartbeat failed). */
export type LeaseVerdict = { held: true } | { held: false; reason: "CANCELLED" | "LEASE_LOST"; detail: string };

export interface RunState {
  /** Claims the next claimable run (or only `runId`) as a new attempt; null when there is none. */
  claim(claimant: Claimant, runId?: string): Promise<ClaimedAttempt | null>;
  /** The fence of an attempt: `onLost` is called once, when the attempt is found to have lost its run. */
  fence(holder: Holder, onLost: OnLost): AttemptFence;
  /** Extends the attempt's lease; says why not when the attempt no longer holds the run. */
  renewLease(holder: Holder, leaseMs: number): Promise<LeaseVerdict>;
  /** Settles the run in the attempt's terminal state, with the settle steps' effects, in the attempt's fence. */
  settle(claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome, steps: readonly SettleStep[]): Promise<RunStatusName>;
  /**
   * A stopping worker, or an attempt the database failed, gives the run back for another attempt
   * to resume: at once, or after `delayAfter(n)` ms when the run's n attempts before were handed
   * back too. Resolves with that delay, or null when the attempt had lost its run and handed
   * back nothing; throws when the database fails.
   */
  handBack(claimed: ClaimedAttempt, fence: AttemptFence, reason: string, delayAfter?: (handedBackBefore: number) => number): Promise<number | null>;
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
   * Runs to announce: queued, or running under a lease that expired (`leaseMarginMs` ago when it
   * has an owner) — the orphaned, whose attempt died or was handed back, first.
   */
  claimable(leaseMarginMs: number): Promise<{ id: string; orphaned: boolean }[]>;
  /** The next queued run of a conversation, which could not start before. */
  nextQueued(conversationId: string): Promise<string | null>;
  /** Records the model the attempt's requests go to. */
  recordModel(write: Transact, runId: string, label: string): Promise<void>;
  /** Counts a model request's tokens against the run's budget; returns the run's total so far. */
  addTokens(write: Transact, runId: string, usage: TokenUsage): Promise<number>;
}

/** The tokens of a model request that count against a run's budget: what it read and wrote. */
export const budgetTokens = (usage: TokenUsage): number => usage.input + usage.output;
