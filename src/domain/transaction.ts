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

/** The transaction the caller is already in, as a Transact (to compose writes into one). */
export function within(tx: Tx, after: AfterCommit): Transact {
  return (work) => work(tx, after);
}

/** A transaction with nothing to guard (tests, and writes that belong to no attempt). */
export function unfenced(prisma: PrismaClient): Transact {
  return async (work) => {
    const after: AfterCommit = [];
    const result = await prisma.$transaction((tx) => work(tx, after));
    runAfterCommit(after);
    return result;
  };
}
