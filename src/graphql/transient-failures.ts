// A transient database failure (db/transient-errors.ts: a timeout, no pooled connection in time, a
// lost connection, a conflict with a concurrent transaction) met while a mutation does its work is
// the database's moment, not the request's fault: the client gets a ServiceUnavailableError in the
// mutation's payload, saying when to try again, instead of a masked internal error.
import { isTransientDatabaseError } from "../db/transient-errors.js";
import { ServiceUnavailableError } from "../domain/errors.js";

/** How long a client is asked to wait before trying again after a transient database failure. */
export const RETRY_AFTER_SECONDS = 1;

/** `work`'s result; a transient database failure it throws becomes a ServiceUnavailableError with `message`. */
export async function unavailableOnTransient<T>(message: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isTransientDatabaseError(error)) throw new ServiceUnavailableError(message, RETRY_AFTER_SECONDS, { cause: error });
    throw error;
  }
}
