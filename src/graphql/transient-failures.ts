// A transient database failure (db/transient-errors.ts: a timeout, no pooled connection in time, a
// lost connection, a conflict with a concurrent transaction) met while a mutation does its work is
// the database's moment, not the request's fault: the client gets a ServiceUnavailableError in the
// mutation's payload, saying when to try again, instead of a
// masked internal error. Every field with a payload union gets it (unavailable-payloads.ts);
// admitRun words its own (its idempotency key makes a retry safe).
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

/** What a mutation's client is told: the failure came before the change was confirmed. */
export const NOT_CONFIRMED =
  "The database failed for a moment (it did not answer in time, no connection to it was free, the connection was lost, or a concurrent change won a conflict) before the change was confirmed: it may or may not have been made. After retryAfterSeconds, read the object to see before repeating the request.";
