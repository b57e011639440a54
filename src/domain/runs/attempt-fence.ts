// The fence of a run attempt (R18). Every write an attempt makes — log entries, trace changes,
// spills, ledger entries, proposals, settling — goes through `write`, which first locks the run
// row and checks, in the same transaction, that the run is still RUNNING under this attempt's
// number and worker. A claim that takes the run over, or a cancellation, updates that row, so it
// either waits for the write to commit or makes the write's check fail: a superseded or cancelled
// attempt can write nothing. A failed check aborts the attempt at once.
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { type Holder, holdsRunSql } from "./holder.js";
import { type Ahead, type Carried, routed, type Transact, type Tx } from "../transaction.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { type DirectQuery, directQuery } from "../../db/direct-statements.js";
import type { StopReason } from "./vocabulary.js";

export type { Holder, Transact };

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

export interface AttemptFence {
  readonly holder: Holder;
  /** A fenced transaction: the one guard every write of the attempt goes through. */
  readonly write: Transact;
  /**
   * A fenced write that is one statement straight through the driver, committing on its own (a
   * run's end: settle-statement.ts): the statement carries the fence's check itself, over the
   * holder it is given, and `work` answers null when the check failed or the statement found
   * something left to decide (both write nothing): the caller then writes through `write`, whose
   * check says why. Absent where the database has no such path. After `writesAfter`, the
   * statement is sent once what is ahead is written, `carry` (when given) what of it is not written
   * yet: the statement writes it with its own, or answers null (nothing written) and it is written
   * on its own before the statement is sent again without it.
   */
  readonly writeDirect?: <T>(work: (query: DirectQuery, holder: Holder, after: AfterCommit, carry?: Carried) => Promise<T | null>) => Promise<T | null>;
  /**
   * The attempt's settle goes after `ahead` (its trace records still queued when its work is
   * over): a one-statement write (writeDirect) carries them; whoever writes otherwise takes them
   * (takeAhead) and waits for them first.
   */
  writesAfter?(ahead: Ahead): void;
  /** What was left ahead of the next write (writesAfter), once: the caller writes after it. */
  takeAhead?(): Ahead | undefined;
  /** Marks the attempt lost (a failed heartbeat, a lost check) and aborts it; never returns. */
  lose(reason: AttemptFencedError["reason"], detail: string): never;
  /** Why the attempt lost its run, once it did. */
  readonly lost: AttemptFencedError | null;
}

/** Called once, when an attempt is found to have lost its run: why, and in words. */
export type OnLost = (reason: AttemptFencedError["reason"], detail: string) => void;

type RunRow = { status: string; attempt: number; lease_owner: string | null };

export class PrismaAttemptFence implements AttemptFence {
  private lostReason: AttemptFencedError | null = null;
  /** What the next write goes after (writesAfter), taken by that write. */
  private ahead: Ahead | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    readonly holder: Holder,
    /** Called once, when the attempt is found to have lost its run. */
    private readonly onLost: OnLost,
  ) {
    // A write that is one statement carries this fence's check inside itself (holder.ts).
    routed(this.write, { db: prisma, holder, refuse: () => this.refuseIfLost() });
  }

  /** A fenced transaction (the one guard every write of the attempt goes through). */
  readonly write: Transact = async (work) => {
    this.refuseIfLost();
    const after: AfterCommit = [];
    const result = await this.prisma.$transaction(async (tx) => {
      await this.guard(tx);
      return work(tx, after);
    });
    runAfterCommit(after);
    return result;
  };

  /** See AttemptFence.writeDirect: one statement on its own, the check inside it. */
  readonly writeDirect = async <T>(work: (query: DirectQuery, holder: Holder, after: AfterCommit, carry?: Carried) => Promise<T | null>): Promise<T | null> => {
    this.refuseIfLost();
    const query = directQuery(this.prisma);
    if (!query) return null;
    const after: AfterCommit = [];
    // Written after the attempt's records still queued, carrying them when they can ride in it.
    const ahead = this.takeAhead();
    const send = (carry?: Carried) => {
      this.refuseIfLost();
      return work(query, this.holder, after, carry);
    };
    const result = ahead?.inOrder ? await ahead.inOrder(send) : await (ahead?.flushed() ?? Promise.resolve()).then(() => send());
    if (result !== null) runAfterCommit(after);
    return result;
  };

  /** See AttemptFence.writesAfter. */
  writesAfter(ahead: Ahead): void {
    this.ahead = ahead;
  }

  /** See AttemptFence.takeAhead. */
  takeAhead(): Ahead | undefined {
    const ahead = this.ahead;
    this.ahead = undefined;
    return ahead;
  }

  /** An attempt known to have lost its run writes nothing more, not even the check. */
  private refuseIfLost(): void {
    if (this.lostReason) throw this.lostReason;
  }

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
      this.onLost(reason, detail);
    }
    throw this.lostReason;
  }

  get lost(): AttemptFencedError | null {
    return this.lostReason;
  }
}
