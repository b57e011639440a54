// The fence of a run attempt (R18). Every write an attempt makes — log entries, trace changes,
// spills, ledger entries, proposals, settling — goes through `write`, which first locks the run
// row and checks, in the same transaction, that the run is still RUNNING under this attempt's
// number and worker. A claim that takes the run over, or a cancellation, updates that row, so it
// either waits for the write to commit or makes the write's check fail: a superseded or cancelled
// attempt can write nothing. A failed check aborts the attempt at once.
import { type AfterCommit, runAfterCommit } from "../../domain/after-commit.js";
import { type Holder, holdsRunSql } from "../../domain/research/run-holder.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { RunStopped, type StopReason } from "../loop/stop.js";

type Tx = Prisma.TransactionClient;

export type { AfterCommit };

/** Runs `work` in one transaction; what it pushes to `after` runs only after commit. */
export type Transact = <T>(work: (tx: Tx, after: AfterCommit) => Promise<T>) => Promise<T>;

export type { Holder };

/** A write of an attempt that no longer holds its run; nothing of it was applied. */
export class AttemptFencedError extends Error {
  override name = "AttemptFencedError";
  constructor(
    readonly holder: Holder,
    readonly reason: Extract<StopReason, "CANCELLED" | "LEASE_LOST">,
    detail: string,
  ) {
    super(`attempt ${holder.attempt} of run ${holder.runId} may no longer write: ${detail}`);
  }
}

type RunRow = { status: string; attempt: number; lease_owner: string | null };

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

export class AttemptFence {
  private lostReason: AttemptFencedError | null = null;

  constructor(
    private readonly prisma: PrismaClient,
    readonly holder: Holder,
    /** Called once, when the attempt is found to have lost its run. */
    private readonly onLost: (stop: RunStopped) => void,
  ) {}

  /** A fenced transaction (the one guard every write of the attempt goes through). */
  readonly write: Transact = async (work) => {
    if (this.lostReason) throw this.lostReason;
    const after: AfterCommit = [];
    const result = await this.prisma.$transaction(async (tx) => {
      await this.guard(tx);
      return work(tx, after);
    });
    runAfterCommit(after);
    return result;
  };

  /** Locks the run row for the rest of `tx` and throws unless this attempt still holds the run. */
  async guard(tx: Tx): Promise<void> {
    const { runId, attempt, workerId } = this.holder;
    const held = await tx.$queryRawUnsafe<unknown[]>(holdsRunSql(1), runId, attempt, workerId);
    if (held.length > 0) return;
    // Lost: say why.
    const [row] = await tx.$queryRawUnsafe<RunRow[]>("SELECT status, attempt, lease_owner FROM run WHERE id = $1", runId);
    const problem = !row
      ? "the run no longer exists"
      : row.attempt !== attempt || row.lease_owner !== workerId
        ? `attempt ${row.attempt} (${row.lease_owner ?? "no worker"}) holds it now`
        : `it is ${row.status}`;
    this.lose(row?.status === "CANCELLED" && row.attempt === attempt ? "CANCELLED" : "LEASE_LOST", problem);
  }

  /** Marks the attempt lost (a failed heartbeat, a lost check) and aborts it; never returns. */
  lose(reason: AttemptFencedError["reason"], detail: string): never {
    if (!this.lostReason) {
      this.lostReason = new AttemptFencedError(this.holder, reason, detail);
      this.onLost(new RunStopped(reason, detail));
    }
    throw this.lostReason;
  }

  get lost(): AttemptFencedError | null {
    return this.lostReason;
  }
}
