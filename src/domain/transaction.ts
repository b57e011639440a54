// A unit of work in one database transaction, and what is announced once it committed. The
// domain's writes take the transaction they run in, so a caller can compose several of them into
// one commit: the agent runtime passes its attempt's fenced transaction (every write of an
// attempt checks, in that same transaction, that the attempt still holds its run), the API its own.
import { type AfterCommit, runAfterCommit } from "./after-commit.js";
import type { Prisma, PrismaClient } from "../generated/prisma/client.js";

export type { AfterCommit };

/** The transaction a write runs in. */
export type Tx = Prisma.TransactionClient;

/** Runs `work` in one transaction; what it pushes to `after` runs only after commit. */
export type Transact = <T>(work: (tx: Tx, after: AfterCommit) => Promise<T>) => Promise<T>;

/**
 * Where a write that is one statement can go instead of a transaction of its own (a log append:
 * domain/runs/log-statement.ts). A transaction costs a turn's critical path its BEGIN, its fence
 * check and its COMMIT as round trips of their own; one statement carries the check inside itself.
 */
export type StatementRoute = {
  /** The pool (the statement commits on its own) or the transaction the caller is already in. */
  db: Tx;
  /** The attempt that must still hold its run (domain/runs/holder.ts): checked inside the statement. */
  holder?: { runId: string; attempt: number; workerId: string };
  /** Set when `db` is a transaction not yet committed: what is announced waits for its commit. */
  after?: AfterCommit;
  /** What must be written first (the trace records made before the write). */
  ready?: () => Promise<void>;
  /**
   * Sends a statement that can carry a write (`carries`) once what must be written first is,
   * carrying in it what of that is not written yet (the trace records made before it), so that
   * they take no round trip of their own: `statement` is given the write to carry, if any.
   */
  inOrder?: InOrder;
  /** Throws when the writer may write nothing more (an attempt known lost), before any statement is sent. */
  refuse?: () => void;
  /** A write that rides in the next statement through the route, as part of it (a model call's span end with its reply). */
  carry?: Carried;
  /** A read that rides in the next statement through the route, as a column of its result (the next turn's requests). */
  read?: CarriedRead;
};

/**
 * A read made as a column of a one-statement write (log-statement.ts), so that it takes no round
 * trip of its own: `expr`, a scalar expression of it (parameters numbered from $first), settled
 * with its value once the statement was answered. A write that took no statement leaves it unsettled.
 */
export type CarriedRead = {
  sql(first: number): { expr: string; params: unknown[] };
  settle(value: unknown): void;
};

/**
 * A write made as CTEs of another one-statement write, so that both commit or neither: a model
 * reply's span end (domain/runs/span-end-statement.ts) in the reply's log append (log-statement.ts).
 */
export type Carried = {
  /**
   * Its CTEs (without WITH), parameters numbered from $first, each write waiting for `guard` (the
   * statement's fence check); `result`, an expression of its result (null when nothing was
   * written); `written`, a condition true once it wrote, which the statement's own writes wait for.
   */
  sql(first: number, guard: string): { ctes: string; params: unknown[]; result: string; written: string };
  /** Called with its result once the statement that carried it committed. */
  settle(result: unknown): void;
  /**
   * The same write for a statement that takes seq numbers of the same trace itself (a run's
   * settle, which ends the trace): that statement's one update of the trace row adds `step.count`
   * seq numbers and `step.counted` records first, in the CTE named `seqs` (its `base` column the
   * seq before them), as long as `holds` (a condition on the trace row aliased `trace`) is true;
   * `ends`, the spans it ends. Absent when the write cannot go in such a statement (it leaves a span running).
   */
  sharing?(
    first: number,
    seqs: string,
  ): { ctes: string; params: unknown[]; result: string; holds: (trace: string) => string; step: { count: string; counted: string }; ends: string[] };
};

/** How a route sends a statement after what must be written first (StatementRoute.inOrder). */
export type InOrder = <T>(statement: (carry: Carried | undefined) => Promise<T | null>) => Promise<T | null>;

const routes = new WeakMap<Transact, StatementRoute>();

/** `write`, known to take one-statement writes through `route` too. */
export function routed(write: Transact, route: StatementRoute): Transact {
  routes.set(write, route);
  return write;
}

/** The statement route of `write`, if it has one; without it a write goes through `write`'s transaction. */
export function routeOf(write: Transact): StatementRoute | undefined {
  return routes.get(write);
}

/**
 * A write as one statement through `write`'s route when it has one — after what must be written
 * first, never for a writer known lost — else, or when `statement` gives null (its check failed,
 * nothing was written), in `write`'s transaction, which refuses a lost attempt and says why.
 * `carries`: the statement writes the route's `carry` with itself, and writes nothing unless that
 * is written (log-statement.ts); then what must be written first may ride in it (`inOrder`).
 */
export async function inOneStatement<T>(
  write: Transact,
  statement: (route: StatementRoute) => Promise<T | null>,
  fallback: (tx: Tx, after: AfterCommit) => Promise<T>,
  { carries = false } = {},
): Promise<T> {
  const route = routeOf(write);
  if (route) {
    const send = (carry: Carried | undefined) => {
      route.refuse?.();
      return statement(carry ? { ...route, carry } : route);
    };
    let done: T | null;
    if (carries && route.inOrder && !route.carry) done = await route.inOrder(send);
    else {
      await route.ready?.();
      done = await send(undefined);
    }
    if (done !== null) return done;
  }
  return write(fallback);
}

/** `write`, its next one-statement write carrying `read` (none through a write without a statement route). */
export function withRead(write: Transact, read: CarriedRead): Transact {
  const route = routeOf(write);
  return route ? routed((work) => write(work), { ...route, read }) : write;
}

/** What an attempt's writes go after: the trace records made before them (TraceSink.flushed, inOrder). */
export type Ahead = { flushed: () => Promise<void>; inOrder?: InOrder };

/** `write`, each of its writes (one statement or a transaction) made once what is `ahead` of it is written. */
export function writeAfter(ahead: Ahead, write: Transact): Transact {
  const route = routeOf(write);
  const ready = ahead.flushed;
  const ordered: Transact = (work) => ready().then(() => write(work));
  return route ? routed(ordered, { ...route, ready, ...(ahead.inOrder && { inOrder: ahead.inOrder }) }) : ordered;
}

/** The transaction the caller is already in, as a Transact (to compose writes into one). */
export function within(tx: Tx, after: AfterCommit): Transact {
  return routed((work) => work(tx, after), { db: tx, after });
}

/** A transaction with nothing to guard (tests, and writes that belong to no attempt). */
export function unfenced(prisma: PrismaClient): Transact {
  return routed(
    async (work) => {
      const after: AfterCommit = [];
      const result = await prisma.$transaction((tx) => work(tx, after));
      runAfterCommit(after);
      return result;
    },
    { db: prisma },
  );
}
