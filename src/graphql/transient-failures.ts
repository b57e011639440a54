// A transient database failure (db/transient-errors.ts: a timeout, no pooled connection in time, a
// lost connection, a conflict with a concurrent transaction) met while a mutation does its work is
// the database's moment, not the request's fault: the client gets a ServiceUnavailableError in the
// mutation's payload, saying when to try again and what the failure left behind, instead of a
// masked internal error. Every field with a payload union gets it (unavailable-payloads.ts);
// admitRun words its own (its idempotency key makes a retry safe).
import type { CommitLedger } from "../db/commit-ledger.js";
import { isTransientDatabaseError } from "../db/transient-errors.js";
import { ServiceUnavailableError } from "../domain/errors.js";
import type { Logger } from "../logger.js";

/** How long a client is asked to wait before trying again after a transient database failure. */
export const RETRY_AFTER_SECONDS = 1;

/** What the operator's log says for each request answered unavailable (a warning: the request was not at fault). */
export const UNAVAILABLE_WARNING = "answered unavailable: the database failed for a moment";

/**
 * `work`'s result; a transient database failure it throws becomes a ServiceUnavailableError with
 * `message`, and the failure itself a warning in the operator's log (the client is not told it).
 */
export async function unavailableOnTransient<T>(logger: Logger, message: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw unavailableFor(error, logger, () => message);
  }
}

/**
 * `error` itself when it is not a transient database failure (or was answered already); else the
 * ServiceUnavailableError a client gets for it, its cause logged as a warning.
 */
export function unavailableFor(error: unknown, logger: Logger, message: () => string): unknown {
  if (error instanceof ServiceUnavailableError || !isTransientDatabaseError(error)) return error;
  logger.warn(UNAVAILABLE_WARNING, { error: String(error) });
  return new ServiceUnavailableError(message(), RETRY_AFTER_SECONDS, { cause: error });
}

/** Nothing was committed: the failed statement was rolled back or never reached the database. */
export const NOTHING_CHANGED =
  "The database failed for a moment (it did not answer in time, no connection to it was free, the connection was lost, or a concurrent change won a conflict) before anything was changed. Try again after retryAfterSeconds.";
/** The change committed; only what came after it (reading the answer) failed. */
export const CHANGE_MADE =
  "The change was made, but the database failed for a moment before the answer was read. Read the object again after retryAfterSeconds rather than repeating the request.";
/** The link was lost with a COMMIT (or a statement outside a transaction) in flight. */
export const OUTCOME_UNKNOWN =
  "The connection to the database was lost while the change was being committed: it may or may not have been made. After retryAfterSeconds, read the object to see before repeating the request.";

/** What a mutation's client is told a transient failure left behind, from what its work had committed. */
export function unavailableMessage(ledger: CommitLedger): string {
  if (ledger.inDoubt) return OUTCOME_UNKNOWN;
  return ledger.committed ? CHANGE_MADE : NOTHING_CHANGED;
}
