// What a piece of work (one GraphQL mutation) had the database commit before a failure, so that
// the client can be told honestly what a transient failure left behind: nothing, a change that
// was made (only reading the answer failed), or an outcome nobody can know (the link was lost
// while a COMMIT, or a statement outside a transaction, was on its way or its answer was).
//
// node-postgres's client class records it (recordingCommits): each statement sent inside
// `trackingCommits` is seen with the ledger of the work that sent it (AsyncLocalStorage follows
// the work through Prisma and the pool: a pooled connection handed over by another request's
// release runs the statement in its sender's context, see keepingLedgers), and each connection
// knows whether it is inside a transaction. Statements sent outside any tracked work cost one lookup and nothing more.
import { AsyncLocalStorage, AsyncResource } from "node:async_hooks";
import type pg from "pg";

export type CommitLedger = {
  /** A change was committed: a COMMIT after a write succeeded, or a write outside a transaction did. */
  committed: boolean;
  /** A COMMIT, or a write outside a transaction, failed without the database's own answer: it may have committed. */
  inDoubt: boolean;
};

const ledgers = new AsyncLocalStorage<CommitLedger>();

/** `work`, with a ledger of what it had committed; the ledger is read when `work` fails. */
export function trackingCommits<T>(work: () => Promise<T>): { ledger: CommitLedger; done: Promise<T> } {
  const ledger: CommitLedger = { committed: false, inDoubt: false };
  return { ledger, done: ledgers.run(ledger, work) };
}

type Kind = "begin" | "commit" | "rollback" | "read" | "write";

/**
 * What a statement does to a transaction, by its first word. Only statements that cannot change
 * data are reads; anything else (a WITH that may update, a function call in DO) counts as a write,
 * so an unknown statement errs towards "may have been made", never towards "nothing was made".
 */
function kindOf(text: string): Kind {
  const word = /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase();
  switch (word) {
    case "BEGIN":
    case "START":
      return "begin";
    case "COMMIT":
    case "END":
      return "commit";
    case "ROLLBACK":
    case "ABORT":
      // ROLLBACK TO SAVEPOINT stays in the transaction.
      return /^\s*ROLLBACK\s+TO\b/i.test(text) ? "read" : "rollback";
    case "SELECT":
    case "SHOW":
    case "SET":
    case "SAVEPOINT":
    case "RELEASE":
    case "VALUES":
    case "EXPLAIN":
      return "read";
    default:
      return "write";
  }
}

/**
 * The database answered the statement with an error of its own on a live connection: the
 * statement did not commit. A lost or hung link (no SQLSTATE, or a connection exception or a
 * session ended, classes 08 and 57P) leaves that unknown.
 */
function answeredByDatabase(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith("08") && !code.startsWith("57P");
}

/** Per connection: inside a transaction, and whether it wrote anything there yet. */
type ConnectionState = { inTransaction: boolean; wrote: boolean };
const states = new WeakMap<object, ConnectionState>();

function stateOf(client: object): ConnectionState {
  let state = states.get(client);
  if (!state) states.set(client, (state = { inTransaction: false, wrote: false }));
  return state;
}

function succeeded(state: ConnectionState, kind: Kind, ledger: CommitLedger): void {
  if (kind === "begin") Object.assign(state, { inTransaction: true, wrote: false });
  else if (kind === "rollback") Object.assign(state, { inTransaction: false, wrote: false });
  else if (kind === "commit") {
    if (state.wrote) ledger.committed = true;
    Object.assign(state, { inTransaction: false, wrote: false });
  } else if (kind === "write") {
    if (state.inTransaction) state.wrote = true;
    else ledger.committed = true;
  }
}

function failed(state: ConnectionState, kind: Kind, ledger: CommitLedger, error: unknown): void {
  const committing = (kind === "commit" && state.wrote) || (kind === "write" && !state.inTransaction);
  if (committing && !answeredByDatabase(error)) ledger.inDoubt = true;
  // A failed COMMIT ends the transaction either way; a failed statement inside one aborts it.
  if (kind === "commit" || kind === "rollback") Object.assign(state, { inTransaction: false, wrote: false });
}

/** node-postgres's client class, recording into the ledger of the work that sent each statement. */
export function recordingCommits(Base: typeof pg.Client): typeof pg.Client {
  const query = Base.prototype.query as (...args: unknown[]) => unknown;
  class Recording extends Base {}
  // node-postgres's overloads are kept: this takes and returns what they do.
  Recording.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const ledger = ledgers.getStore();
    if (!ledger) return query.apply(this, args);
    const first = args[0];
    const text = typeof first === "string" ? first : (first as { text?: unknown } | null)?.text;
    if (typeof text !== "string") return query.apply(this, args);
    const kind = kindOf(text);
    const state = stateOf(this);
    const callback = args.at(-1);
    if (typeof callback === "function")
      return query.apply(this, [
        ...args.slice(0, -1),
        (error: unknown, result: unknown) => {
          if (error) failed(state, kind, ledger, error);
          else succeeded(state, kind, ledger);
          callback(error, result);
        },
      ]);
    const result = query.apply(this, args);
    if (result instanceof Promise)
      result.then(
        () => succeeded(state, kind, ledger),
        (error: unknown) => failed(state, kind, ledger, error),
      );
    return result;
  } as typeof Base.prototype.query;
  return Recording;
}

/**
 * The pool hands a waiting caller its connection from inside another caller's release: with a
 * ledger, the callback is bound to its own caller's context, so the statement it sends is
 * recorded in its sender's ledger (pool.query takes this path too). Promises need nothing: a
 * continuation after `await pool.connect()` runs in its awaiter's context.
 */
export function keepingLedgers(pool: pg.Pool): void {
  const connect = pool.connect.bind(pool) as unknown as (callback?: (...args: unknown[]) => void) => unknown;
  pool.connect = ((callback?: (...args: unknown[]) => void) =>
    callback && ledgers.getStore() ? connect(AsyncResource.bind(callback)) : connect(callback)) as unknown as typeof pool.connect;
}
