// The words of a run's life (R1, R17–R19), in one place: the run as its attempts see it, how an
// attempt ends, why a run stops, what an attempt settles with, and who holds a run. The runtime's
// ports speak these types (runtime/ports/run-state.ts re-exports them); the transitions
// (transitions.ts) are written in them.
import type { LineageLevel } from "../research/conversation-lineage.js";
import type { Message } from "../../generated/prisma/client.js";
import type { RunRequests } from "./run-requests.js";
import type { RunStatusName } from "../../events/topics.js";
import type { RunStopReason } from "../../generated/prisma/enums.js";
import type { AfterCommit } from "../after-commit.js";
import type { Tx } from "../transaction.js";

export type { RunStatusName, RunStopReason };

import type { BudgetStop, CostCap } from "../costs/caps.js";

export type { BudgetStop, CostCap };

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
  /** The publication the run was admitted to continue (its answer becomes that publication's next version). */
  continuesPublicationId: string | null;
  /** The access token that admitted the run (null: a whole principal did) and the workspaces it could READ (workspace/material-reach.ts). */
  admittedByToken: string | null;
  tokenReadableWorkspaceIds: string[];
};

/** How an attempt ended (R18): the run settled in it, it was handed back, its lease was lost, or its instance died. */
export type AttemptOutcome = "COMPLETED" | "HANDED_BACK" | "LEASE_LOST" | "CRASHED";

/**
 * Why an attempt stopped. CANCELLED and TIMED_OUT end the run; HANDED_BACK leaves it for another
 * attempt to resume; LEASE_LOST means another attempt holds the run (or may take it), so this one
 * writes nothing more; PAUSED: its owner asked it to pause and it reached a safe point.
 */
export type StopReason = "CANCELLED" | "TIMED_OUT" | "HANDED_BACK" | "LEASE_LOST" | "PAUSED";

/**
 * How a run was asked to stop (cancelRun): NOW (at once, keeping the text streamed so far),
 * AFTER_TURN (once the current turn's tool calls have finished, before the next model request),
 * CONCLUDE (its tools stopped, then one last model request without tools for the best answer so far).
 */
export type CancelMode = "NOW" | "AFTER_TURN" | "CONCLUDE";

/** A recorded stop request: its mode, when, and by whom. */
export type StopRequest = { mode: CancelMode; at: Date; by: string };

/** Why a run failed: a limit, the model's request, or Dossier itself (INTERNAL_ERROR: a bug or the database). */
export type FailureReason = "MAX_TURNS" | "TOKEN_BUDGET" | "CONTEXT_OVERFLOW" | "MODEL_ERROR" | "INTERNAL_ERROR";

/** What an attempt ends with: an answer, a stop, calls that wait for decisions, or a failure. */
export type Outcome =
  /** `concluded`: the answer of the one last request a CONCLUDE stop made (the run concluded early). */
  /** `budget`: a cost cap stopped the run before a model request; `answer` is the text it had so far (partial). */
  | { type: "final"; answer: string; concluded?: boolean; budget?: BudgetStop }
  /** `partialAnswer`: the text a model reply had streamed when the run was stopped NOW. */
  /** `afterTurn`: the run stops (CANCELLED) before its next model request, as an AFTER_TURN stop asked. */
  /** `databaseFailed`: the database failed the attempt (transient), which hands the run back to resume later. */
  /** `retryAfterMs`: the model endpoint asked to wait (HANDED_BACK): the run resumes no sooner. */
  | { type: "interrupted"; status: StopReason; databaseFailed?: string; retryAfterMs?: number; partialAnswer?: string; afterTurn?: boolean }
  /** Tool calls of the step wait for a person's decision: the run waits (WAITING) with no attempt holding it. */
  | { type: "waiting"; toolCallIds: string[] }
  | { type: "failed"; reason: FailureReason; message: string };

/** A span of the run's trace (a run's trace shares its id). */
export type SpanRef = { id: string; traceId: string };

/** Whether an instance still has a database session: tells a crashed attempt from one that lost its lease. */
export type InstanceLiveness = (instance: string) => Promise<boolean>;

/** One claim of a run: the run as claimed, the attempt's number, the RUN span and the attempt's span. */
/**
 * `leaseSentAt`: this process's monotonic time (performance.now()) just before the statement that
 * set the lease was sent — the start of the attempt's own clock (runtime/attempt/own-clock.ts).
 */
export type ClaimedAttempt = {
  run: RunRecord;
  number: number;
  root: SpanRef;
  span: SpanRef;
  leaseSentAt: number;
  /** The run's conversation's lineage, when the claim read it (a first attempt's): its log is then one read. */
  lineage?: LineageLevel[];
  /** The run's requests, when the claim read them (a first attempt's): its first turn reads them no more. */
  requests?: RunRequests;
  /** The conversation's whole log, when the claim knows it (a first attempt whose question is the conversation's first message). */
  log?: Message[];
};

/**
 * The attempts one claim started, in its order; `runsWaiting`: the claim found runs waiting to be
 * claimed, taken or not — false only when it found none at all (claim-statement.ts).
 */
export type ClaimedAttempts = ClaimedAttempt[] & { runsWaiting: boolean };

export type SettleContext = {
  tx: Tx;
  run: RunRecord;
  outcome: Outcome;
  status: RunStatusName;
  /** When the run ended, as its row records it: what a step marks with a time (its spills' release) says the same. */
  at: Date;
  /** What to announce once the settle transaction committed. */
  after: AfterCommit;
};

/**
 * What a settle step writes when the settle is one statement (settle-statement.ts): the outcome
 * the run records for its publication when it publishes nothing; that it has nothing to do when
 * the run has no pending proposal; that it releases the run's spills.
 */
export type SettleStepInStatement = {
  publication?: { outcome: "NO_WORKSPACE" | "NOT_SUCCEEDED" | "EMPTY_ANSWER" | "NO_VISIBLE_CHARACTERS" | "TOO_LONG"; reason: string };
  noPendingProposals?: true;
  releaseSpills?: true;
};

/**
 * A part of settling owned by another part of the runtime; it writes only through `tx`.
 * `inStatement`: what it writes, for this run and outcome, when that can be part of the settle's
 * one statement (null: it cannot; the settle then takes its statements one by one).
 */
export type SettleStep = ((context: SettleContext) => Promise<void>) & {
  inStatement?: (run: RunRecord, outcome: Outcome) => SettleStepInStatement | null;
};

/** How a cancelled run's attempt ends when what it still holds is given back. */
export type CancelledEnding = {
  attempt: number;
  owner: string;
  outcome: AttemptOutcome;
  spanStatus: "CANCELLED" | "INTERRUPTED";
  reason: string;
  /** Only when the lease has expired (the sweep: the attempt may still be stopping). */
  expiredOnly?: boolean;
  /** The text the model had streamed when the run was stopped NOW: kept as the run's (partial) answer. */
  partialAnswer?: string;
};

/** Who claims: the lease owner, how long a lease lasts, and how a new run's RUN span is described. */
export type Claimant = {
  workerId: string;
  leaseMs: number;
  /** A run whose lease has an owner is taken over only this long after the lease expired (see attempt/own-clock.ts). */
  leaseMarginMs: number;
  /** A principal with this many running runs gets no queued run of theirs claimed (their resumptions still are). */
  maxRunningPerPrincipal: number;
  liveness: InstanceLiveness;
  describeRun: (run: RunRecord) => { name: string; attributes: Record<string, unknown> };
  /** The model the claimant's attempts ask: the claim records it on the runs it takes (their modelLabel). */
  modelLabel?: string;
};

/** A run ended outside any attempt (a WAITING run past its deadline): its conversation's next run may start. */
export type EndedRun = { id: string; conversationId: string };

/** A renewal's terms: the lease it grants, and the margin before its end past which it grants none (RUN_LEASE_MARGIN_MS). */
export type LeaseTerms = { leaseMs: number; marginMs: number };

/** A lease the heartbeat found gone: cancelled under this attempt, or taken over (or the heartbeat failed). */
export type LeaseVerdict = { held: true; stop?: CancelMode | null } | { held: false; reason: "CANCELLED" | "LEASE_LOST"; detail: string };

/**
 * The most tokens a count holds (a run's tokensUsed, a span's usage: 32-bit, as GraphQL's Int): a
 * count reported past it is taken as it, and a sum that would pass it stays at it (saturates).
 */
export const MAX_TOKEN_COUNT = 2_147_483_647;

/** `a + b` tokens, at most MAX_TOKEN_COUNT. */
export const addTokenCounts = (a: number, b: number): number => Math.min(a + b, MAX_TOKEN_COUNT);

/** The tokens of a model request that count against a run's budget: what it read and wrote (at most MAX_TOKEN_COUNT). */
export const budgetTokens = (usage: { input: number; output: number }): number => addTokenCounts(usage.input, usage.output);
