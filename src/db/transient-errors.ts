// Which database errors are transient: the database (or the way to it) failed, not the work.
// A run whose attempt meets one hands the run back to resume later instead of failing it; a
// run ends FAILED only for a reason of its own. One place decides, for every shape these
// errors arrive in: node-postgres errors (SQLSTATE in `code`, socket errors in `code`, its
// own timeouts by message), Prisma 7's errors over @prisma/adapter-pg (a P-code, with the
// driver's error in `meta.driverAdapterError.cause`: `kind`, `originalCode`), and errors
// wrapped in another's `cause`. Checked against what they really throw (test/db/transient-errors.test.ts).

/**
 * SQLSTATEs that say nothing about the statement: connection exceptions (class 08), too many
 * connections and other insufficient resources (class 53), serialization failures and
 * deadlock victims (40001, 40P01), cancellation by a statement or lock timeout (57014, 55P03),
 * sessions ended by an administrator, a crash or a shutdown (57P01–57P05), and a transaction
 * ended for sitting idle (25P03).
 */
const TRANSIENT_STATES = new Set(["40001", "40P01", "57014", "55P03", "57P01", "57P02", "57P03", "57P04", "57P05", "25P03"]);
const TRANSIENT_CLASSES = ["08", "53"];

/** What @prisma/adapter-pg calls the driver's failures that are about the connection, not the query. */
const TRANSIENT_KINDS = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections", "TransactionWriteConflict"]);

/**
 * Prisma's own codes for the same: unreachable, timed out, connection closed, no pooled
 * connection in time, a write conflict or deadlock, and its transaction manager's errors
 * (a transaction that could not start within maxWait or outlived its timeout).
 */
const TRANSIENT_PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2028", "P2034"]);

/** Socket-level failures Node reports in `code`. */
const TRANSIENT_SOCKET_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/** node-postgres's messages for a lost connection and its client-side timeouts (they carry no code). */
const TRANSIENT_MESSAGES = [
  /connection terminated/i,
  /query read timeout/i,
  /timeout exceeded when trying to connect/i,
  /connection timeout/i,
  /client has encountered a connection error/i,
  /cannot use a pool after calling end/i,
  /the database did not answer within/i,
];

type Shape = {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown; code?: unknown } } };
};

/** True when `error` (or an error it wraps) is a transient database failure. */
export function isTransientDatabaseError(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  // Bounded: causes form a short chain, and a cycle is cut by `seen`.
  for (let depth = 0; depth < 8 && current && typeof current === "object" && !seen.has(current); depth += 1) {
    seen.add(current);
    if (transientItself(current as Shape)) return true;
    current = (current as Shape).cause;
  }
  return false;
}

function transientItself(error: Shape): boolean {
  const driver = error.meta?.driverAdapterError?.cause;
  if (driver) {
    if (typeof driver.kind === "string" && TRANSIENT_KINDS.has(driver.kind)) return true;
    if (transientState(driver.originalCode) || transientState(driver.code)) return true;
  }
  const code = typeof error.code === "string" ? error.code : undefined;
  if (code && (transientState(code) || TRANSIENT_PRISMA_CODES.has(code) || TRANSIENT_SOCKET_CODES.has(code))) return true;
  const message = typeof error.message === "string" ? error.message : "";
  return TRANSIENT_MESSAGES.some((pattern) => pattern.test(message));
}

function transientState(code: unknown): boolean {
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return false;
  return TRANSIENT_STATES.has(code) || TRANSIENT_CLASSES.includes(code.slice(0, 2));
}

/**
 * SQLSTATEs of a transaction that lost to a concurrent one and was rolled back whole: a
 * serialization failure (on PostgreSQL also an UPDATE whose row another transaction moved to
 * another partition meanwhile, as a week's expiry moves a live trace's rows to the retained
 * partition) and a deadlock victim. Running the transaction again is safe and usually succeeds.
 */
const CONFLICT_STATES = new Set(["40001", "40P01"]);

/** True when `error` (or an error it wraps) says its transaction lost to a concurrent one (see CONFLICT_STATES). */
export function isTransactionConflict(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current && typeof current === "object" && !seen.has(current); depth += 1) {
    seen.add(current);
    const shape = current as Shape;
    const driver = shape.meta?.driverAdapterError?.cause;
    if (driver?.kind === "TransactionWriteConflict" || CONFLICT_STATES.has(String(driver?.originalCode)) || CONFLICT_STATES.has(String(driver?.code)))
      return true;
    if (shape.code === "P2034" || CONFLICT_STATES.has(String(shape.code))) return true;
    current = shape.cause;
  }
  return false;
}

/** How often a conflicting transaction is tried in all, and the longest pause between tries. */
const CONFLICT_ATTEMPTS = 5;
const CONFLICT_PAUSE_MS = 50;

/**
 * Runs `transaction` (one whole database transaction, nothing of it committed when it throws) and
 * runs it again when it lost to a concurrent transaction (isTransactionConflict), up to 5 times in
 * all with a short random pause between tries; any other error, or the fifth conflict, is thrown.
 */
export async function retryingConflicts<T>(transaction: () => Promise<T>, { attempts = CONFLICT_ATTEMPTS } = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt >= attempts || !isTransactionConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * CONFLICT_PAUSE_MS * attempt));
    }
  }
}

/** Thrown when a database call outlives the deadline its caller gave it. */
export class DatabaseDeadlineError extends Error {
  override name = "DatabaseDeadlineError";
  constructor(what: string, ms: number) {
    super(`the database did not answer within ${ms} ms (${what})`);
  }
}

/** `promise`, or a DatabaseDeadlineError once `ms` passed (the call itself goes on; its result is dropped). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DatabaseDeadlineError(what, ms)), ms);
    timer.unref();
  });
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
