// A transient database failure (db/transient-errors.ts: a timeout, no pooled connection in time, a
// lost connection, a conflict with a concurrent transaction) met while a mutation does its work is
// the database's moment, not the request's fault: the client gets a ServiceUnavailableError in the
// mutation's payload, saying when to try again, instead of a masked internal error.
import { isTransientDatabaseError } from "../db/transient-errors.js";
import { ServiceUnavailableError } from "../domain/errors.js";
import type { Logger } from "../logger.js";

/** How long a client is asked to wait before trying again after a transient database failure. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * `work`'s result; a transient database failure it throws becomes a ServiceUnavailableError with
 * `message`, and the failure itself a warning in the operator's log (the client is not told it).
 */
export async function unavailableOnTransient<T>(logger: Logger, message: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!isTransientDatabaseError(error)) throw error;
    logger.warn("answered unavailable: the database failed for a moment", { error: String(error) });
    throw new ServiceUnavailableError(message, RETRY_AFTER_SECONDS, { cause: error });
  }
}
