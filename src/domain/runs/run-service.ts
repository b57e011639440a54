// Stopping runs (R1, R18). Cancellation is final the moment it is recorded: the run is CANCELLED,
// every span still open is ended, and the trace is closed, in one transaction (the cancel row of
// transitions.ts). The attempt that was executing it (on any instance) can write nothing more —
// its fence checks the status — so it publishes nothing, applies no proposal and links nothing,
// even with its final reply logged. It stops its model and tool calls and gives back its lease
// and the conversation's slot (releaseCancelled).
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { type EventPublisher, publishRunListChange } from "../../events/topics.js";
import type { Prisma, PrismaClient, Run } from "../../generated/prisma/client.js";
import { publishTraceChanges } from "../trace/trace-writes.js";
import { NotFoundError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { type Announcers, announceApplied, applyTransition } from "./apply-transition.js";
import { lockRun } from "./lock-order.js";
import type { RunAnnouncer } from "./run-announcer.js";
import { type TagsChange, updateRunTags } from "./run-tags.js";
import { TRANSITIONS } from "./transitions.js";

export class RunService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher; announcer?: RunAnnouncer }) {}

  /** Cancels a queued, running or waiting run; a run already settled is returned as it is. */
  async cancelRun(actor: Actor, runId: string): Promise<Run> {
    const after: AfterCommit = [];
    const { announcer } = this.deps;
    const run = await this.deps.prisma.$transaction(async (tx) => {
      const owned = await tx.run.findFirst({ where: { id: runId, ownerId: actor.principalId }, select: { id: true } });
      if (!owned) throw new NotFoundError("Run", runId);
      const runs = announcer ? { runs: (ids: string[]) => void announcer.announce(ids), nextQueued: (id: string) => nextQueuedOf(this.deps.prisma, id) } : {};
      await cancelIn(tx, { runId, events: this.deps.events, reason: "the run was cancelled by its owner", ...runs }, after);
      return tx.run.findUniqueOrThrow({ where: { id: runId } });
    });
    runAfterCommit(after);
    return run;
  }

  /** Adds and removes tags of one of the actor's runs (run-tags.ts). */
  async updateTags(actor: Actor, runId: string, change: TagsChange): Promise<Run> {
    const run = await updateRunTags(this.deps.prisma, actor.principalId, runId, change);
    // Committed: the live run lists filtered on tags hear of it now, not at their next reread.
    publishRunListChange(this.deps.events, actor.principalId);
    return run;
  }
}

/** The next queued run of a conversation. */
async function nextQueuedOf(prisma: PrismaClient, conversationId: string): Promise<string | null> {
  const next = await prisma.run.findFirst({
    where: { conversationId, status: "QUEUED" },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { id: true },
  });
  return next?.id ?? null;
}

/**
 * Cancels a queued, running or waiting run inside the caller's transaction; false when it had already
 * ended. A run no attempt holds (queued, handed back, waiting) also gives its conversation's slot back;
 * a held one keeps it until its attempt has stopped. A run that never started gets its trace now,
 * ended, so whoever follows it sees it end.
 */
export async function cancelIn(
  tx: Prisma.TransactionClient,
  { runId, events, reason, ...announcers }: { runId: string; events: EventPublisher; reason: string } & Partial<Pick<Announcers, "runs" | "nextQueued">>,
  after: AfterCommit,
): Promise<boolean> {
  // The run row is locked first (lock-order.ts), as every write of an attempt locks it: a write in
  // flight commits before this, and any later one sees the cancellation.
  const run = await lockRun(tx, runId);
  if (!run) return false;
  const applied = await applyTransition(tx, TRANSITIONS.cancel, run, { at: new Date(), reason, decisionReason: "the run was cancelled", events });
  if (!applied) return false;
  after.push(() => announceApplied({ events, trace: (changes) => publishTraceChanges(events, changes), ...announcers }, applied));
  return true;
}
