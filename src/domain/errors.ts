import type { Run, ToolApproval } from "../generated/prisma/client.js";
import type { RunStatus } from "../generated/prisma/enums.js";
import { groupedDigits } from "./text/grouped-digits.js";
// Expected failures are values of these classes; the GraphQL layer exposes each as a typed
// error in mutation payloads. Anything else thrown is a bug and is masked from clients.

export abstract class DomainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export type ValidationIssue = { field: string; message: string };

export class ValidationError extends DomainError {
  constructor(readonly issues: ValidationIssue[]) {
    // The message alone says what is wrong: it is all a client that selects `... on Error { message }` shows.
    super(issues.length > 0 ? `Invalid input: ${issues.map((issue) => `${issue.field}: ${issue.message}`).join("; ")}` : "Invalid input.");
  }
}

/** Also what a client gets for objects it may not see: their existence is never revealed. */
export class NotFoundError extends DomainError {
  constructor(
    readonly entity: string,
    readonly id: string,
  ) {
    super(`${entity} not found.`);
  }
}

export class StaleVersionError extends DomainError {
  constructor(
    readonly expectedVersion: number,
    readonly currentVersion: number,
  ) {
    super(`Expected version ${expectedVersion}, but the current version is ${currentVersion}.`);
  }
}

/** The same idempotency key was used for a different request. */
export class IdempotencyConflictError extends DomainError {
  constructor(readonly idempotencyKey: string) {
    super(`Idempotency key "${idempotencyKey}" was already used for a different request.`);
  }
}

/**
 * The database failed the request for a moment, not the request itself: it did not answer in time
 * (DB_QUERY_TIMEOUT_MS, DB_STATEMENT_TIMEOUT_MS), no pooled connection was free in time, the
 * connection was lost, or a concurrent transaction won a conflict. Trying again may succeed.
 */
export class ServiceUnavailableError extends DomainError {
  constructor(
    message: string,
    /** How long to wait before trying again. */
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(message);
    if (options && "cause" in options) this.cause = options.cause;
  }
}

/** The workspace is archived: it takes no new links or admissions until restored. */
export class WorkspaceArchivedError extends DomainError {
  constructor(readonly workspaceId: string) {
    super("The workspace is archived; restore it to link objects or admit runs.");
  }
}

export class UnsupportedError extends DomainError {}

/** The caller is known but may not do this: an access token outside what it was granted, or a key without the scope. */
export class ForbiddenError extends DomainError {}

/** A checkpoint update expected a revision that is no longer the current one (W12). */
export class StaleRevisionError extends DomainError {
  constructor(
    readonly expectedRevision: number,
    readonly currentRevision: number,
  ) {
    super(`Expected checkpoint revision ${expectedRevision}, but the current revision is ${currentRevision}.`);
  }
}

/**
 * A checkpoint update named, as a source its sections rest on, a publication version that is
 * not eligible (W7, W13): revoked, altered, or built on such a version. Nothing was written.
 */
export class IneligibleSourceError extends DomainError {
  constructor(
    readonly sourceVersionId: string,
    readonly reason: string,
  ) {
    super(`A named source is not eligible: ${reason}.`);
  }
}

/** A run was asked for in a conversation that has a queued or running run, and the admission said REJECT (R19). */
export class ConversationBusyError extends DomainError {
  constructor(
    readonly conversationId: string,
    /** The conversation's active run: the running one, or the first queued. */
    readonly activeRun: Run,
  ) {
    super("The conversation has a run in progress; admit with multitask ENQUEUE to run after it, or INTERRUPT to replace it.");
  }
}

/**
 * The principal already has as many runs QUEUED as one principal may (MAX_QUEUED_RUNS_PER_PRINCIPAL):
 * nothing was admitted. A place frees up when one of them starts, is paused or is cancelled.
 */
export class QueueFullError extends DomainError {
  /**
   * `tokensShare`: the refused run is an access token's, and the principal's tokens hold that many
   * queued runs, their share; `endUserShare`: its end user's tokens hold that many, the end user's share.
   */
  constructor(
    readonly maxQueuedRuns: number,
    readonly tokensShare?: number,
    readonly endUserShare?: number,
  ) {
    super(
      endUserShare !== undefined
        ? `This end user's access tokens already hold ${groupedDigits(endUserShare)} ${endUserShare === 1 ? "run" : "runs"} queued, the most one end user may have waiting (a quarter of the ${groupedDigits(tokensShare ?? 0)} its principal's access tokens may, which other end users keep); nothing was admitted. Admit more once some have started or been cancelled.`
        : tokensShare === undefined
          ? `You already have ${groupedDigits(maxQueuedRuns)} runs queued, the most one principal may have waiting; nothing was admitted. Admit more once some have started or been cancelled.`
          : `Your principal's access tokens already hold ${groupedDigits(tokensShare)} runs queued, half of the ${groupedDigits(maxQueuedRuns)} one principal may have waiting (its API keys keep the rest); nothing was admitted. Admit more once some have started or been cancelled.`,
    );
  }
}

/**
 * The principal already has as many schedules as one principal may (MAX_SCHEDULES_PER_PRINCIPAL):
 * nothing was created. Deleting one frees a place.
 */
export class ScheduleLimitError extends DomainError {
  constructor(readonly maxSchedules: number) {
    super(`You already have ${groupedDigits(maxSchedules)} schedules, the most one principal may have; nothing was created. Delete one to create another.`);
  }
}

/**
 * The artifact would take the principal's artifacts past the bytes one principal may store
 * (MAX_ARTIFACT_BYTES_PER_PRINCIPAL): nothing was created. Retained artifacts count, and so do
 * temporary ones until they expire.
 */
export class ArtifactStorageLimitError extends DomainError {
  constructor(
    readonly maxBytes: number,
    readonly bytesInUse: number,
    readonly size: number,
  ) {
    super(
      `Your artifacts already hold ${groupedDigits(bytesInUse)} bytes; this one's ${groupedDigits(size)} would pass the ${groupedDigits(maxBytes)} one principal may store, so nothing was created. Temporary artifacts stop counting once they expire.`,
    );
  }
}

/**
 * The principal already has as many live API keys as one principal may (MAX_API_KEYS_PER_PRINCIPAL):
 * nothing was created. Revoking one frees a place.
 */
export class ApiKeyLimitError extends DomainError {
  constructor(readonly maxApiKeys: number) {
    super(`You already have ${groupedDigits(maxApiKeys)} API keys, the most one principal may have; nothing was created. Revoke one to create another.`);
  }
}

/**
 * The conversation to fork is already a fork MAX_FORK_DEPTH levels deep (a fork of a fork of …):
 * nothing was created. Every read of a log costs one index range per level, so the chain is bounded.
 */
export class ForkDepthLimitError extends DomainError {
  constructor(readonly maxForkDepth: number) {
    super(
      `This conversation is already ${maxForkDepth} forks deep, the most a fork may be; nothing was created. Fork it at an earlier message, fork a conversation it forked from (at a message it shares), or start a new conversation.`,
    );
  }
}

/**
 * A temporary artifact is past its expiry (W16): its content is gone or about to be swept, and
 * it can no longer be retained. Its metadata still reads.
 */
export class ArtifactExpiredError extends DomainError {
  constructor(
    readonly artifactId: string,
    readonly expiredAt: Date,
  ) {
    super("The artifact has expired; its content is no longer kept.");
  }
}

/** A tool call's approval was already decided (by a person, by expiry or by the run's end); the first decision stands. */
export class AlreadyDecidedError extends DomainError {
  constructor(readonly approval: ToolApproval) {
    super(`The tool call was already decided: ${approval.decision ?? "closed"}${approval.reason ? ` (${approval.reason})` : ""}.`);
  }
}

/**
 * A decision on a call of a run that is not waiting for decisions (WAITING, or PAUSED while it
 * waited): while an attempt holds the run (RUNNING), its own tools could be the ones deciding, so
 * nothing is decided then. The request stays open; decide it once the run waits.
 */
export class RunNotWaitingError extends DomainError {
  constructor(
    readonly approval: ToolApproval,
    readonly status: RunStatus,
  ) {
    super(`The run is ${status}, not waiting for decisions: a call is decided only while its run waits (WAITING or PAUSED). The request stays open.`);
  }
}

/** The run has ended (SUCCEEDED, FAILED, CANCELLED, TIMED_OUT): it takes no more input, and it can be neither paused nor resumed. */
export class RunEndedError extends DomainError {
  constructor(readonly run: Run) {
    super(
      `The run has ended (${run.status}): send the text as a new run of its conversation; only a queued, running, waiting or paused run can be paused or resumed.`,
    );
  }
}

/**
 * The run's trace expired under its retention policy (Trace retention): its events, payloads and
 * replay log are gone, and with DELETE its spans too. KEEP_SUMMARY keeps the spans' skeleton.
 */
export class TraceExpiredError extends DomainError {
  constructor(
    readonly runId: string,
    readonly expiredAt: Date,
    readonly mode: "DELETE" | "KEEP_SUMMARY",
  ) {
    super(`The run's trace expired on ${expiredAt.toISOString()} under its retention policy (${mode}).`);
  }
}
