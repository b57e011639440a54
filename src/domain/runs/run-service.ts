// Stopping runs (R1, R18). Cancellation is final the moment it is recorded: the run is CANCELLED,
// every span still open is ended, and the trace is closed, in one transaction (the cancel row of
// transitions.ts). The attempt that was executing it (on any instance) can write nothing more —
// its fence checks the status — so it publishes nothing, applies no proposal and links nothing,
// even with its final reply logged. It stops its model and tool calls and gives back its lease
// and the conversation's slot (releaseCancelled), keeping the text its model had streamed as the
// run's partial answer.
//
// Stop modes (cancelRun's mode): NOW is the cancellation above. AFTER_TURN and CONCLUDE on a
// running run are recorded on the run row (requestStop) — durable, so the attempt executing it on
// any instance learns of it: at once from the announcement, from its next lease renewal, and
// before every model request it reads it. Every stop is final: a second request of another mode
// answers the recorded one unchanged, except NOW, which escalates any stop still pending.
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
import type { Transition } from "./transition-row.js";
import { TRANSITIONS } from "./transitions.js";
import type { CancelMode, RunStatusName, StopRequest } from "./vocabulary.js";

export class RunService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher; announcer?: RunAnnouncer }) {}

  /** Stops a queued, running or waiting run as `mode` says; a run already settled is returned as it is. */
  async cancelRun(actor: Actor, runId: string, mode: CancelMode = "NOW"): Promise<Run> {
    const after: AfterCommit = [];
    const { announcer } = this.deps;
    const run = await this.deps.prisma.$transaction(async (tx) => {
      const owned = await tx.run.findFirst({ where: { id: runId, ownerId: actor.principalId }, select: { id: true } });
      if (!owned) throw new NotFoundError("Run", runId);
      const runs = announcer ? { runs: (ids: string[]) => void announcer.announce(ids), nextQueued: (id: string) => nextQueuedOf(this.deps.prisma, id) } : {};
      const stop = { mode, at: new Date(), by: actor.principalId };
      const reason = mode === "NOW" ? "the run was cancelled by its owner" : `the run was asked to stop (${mode}) by its owner`;
      await cancelIn(tx, { runId, events: this.deps.events, reason, stop, ...runs }, after);
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
  {
    runId,
    events,
    reason,
    stop,
    ...announcers
  }: { runId: string; events: EventPublisher; reason: string; stop?: StopRequest } & Partial<Pick<Announcers, "runs" | "nextQueued">>,
  after: AfterCommit,
): Promise<boolean> {
  // The run row is locked first (lock-order.ts), as every write of an attempt locks it: a write in
  // flight commits before this, and any later one sees the cancellation.
  const run = await lockRun(tx, runId);
  if (!run) return false;
  const row = stop ? await stopRow(tx, runId, stop.mode) : TRANSITIONS.cancel;
  if (!row) return false;
  const decisionReason = row === TRANSITIONS.concludeWaiting ? "the run was asked to conclude" : "the run was cancelled";
  const applied = await applyTransition(tx, row, run, { at: new Date(), reason, decisionReason, events, stop });
  if (!applied) return false;
  after.push(() => announceApplied({ events, trace: (changes) => publishTraceChanges(events, changes), ...announcers }, applied));
  return true;
}

/**
 * The row a stop takes, by the run's status and the stop already recorded; null when it takes none
 * (the run has ended, or a stop is recorded and this one does not escalate it). AFTER_TURN on a run
 * with no turn under way (queued, or waiting for decisions) stops it at once, as NOW; CONCLUDE on a
 * queued run leaves it queued to make only its concluding request, on a waiting one rejects the
 * held calls and resumes it to conclude.
 */
async function stopRow(tx: Prisma.TransactionClient, runId: string, mode: CancelMode): Promise<Transition | null> {
  const current = await tx.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, stopMode: true } });
  const status: RunStatusName = current.status;
  if (!["QUEUED", "RUNNING", "WAITING", "PAUSED"].includes(status)) return null;
  if (mode === "NOW") return TRANSITIONS.cancel;
  if (current.stopMode !== null) return null;
  // A run no attempt holds has no turn to finish: AFTER_TURN stops it at once.
  if (mode === "AFTER_TURN") return status === "RUNNING" ? TRANSITIONS.requestStop : TRANSITIONS.cancel;
  if (status === "QUEUED") return TRANSITIONS.requestConclusionQueued;
  if (status === "PAUSED") return TRANSITIONS.requestConclusionPaused;
  return status === "WAITING" ? TRANSITIONS.concludeWaiting : TRANSITIONS.requestStop;
}
