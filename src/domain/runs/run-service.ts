// Stopping runs (R1, R18). Cancellation is final the moment it is recorded: the run is CANCELLED,
// every span still open is ended, and the trace is closed, in one transaction. The attempt that
// was executing it (on any instance) can write nothing more — its fence checks the status — so
// it publishes nothing, applies no proposal and links nothing, even with its final reply logged.
// It stops its model and tool calls and gives back its lease and the conversation's slot.
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { type EventPublisher, publishRunStatus } from "../../events/topics.js";
import type { Prisma, PrismaClient, Run } from "../../generated/prisma/client.js";
import { endOpenSpansIn, endTraceIn, publishTraceChanges } from "../trace/trace-writes.js";
import { NotFoundError } from "../errors.js";
import { rejectOpenIn } from "./tool-approval-service.js";
import type { Actor } from "../principal/principal-service.js";
import { recordRunEventById } from "../webhooks/webhook-events.js";

export class RunService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher }) {}

  /** Cancels a queued, running or waiting run; a run already settled is returned as it is. */
  async cancelRun(actor: Actor, runId: string): Promise<Run> {
    const after: AfterCommit = [];
    const run = await this.deps.prisma.$transaction(async (tx) => {
      const owned = await tx.run.findFirst({ where: { id: runId, ownerId: actor.principalId }, select: { id: true } });
      if (!owned) throw new NotFoundError("Run", runId);
      await cancelIn(tx, { runId, events: this.deps.events, reason: "the run was cancelled by its owner" }, after);
      return tx.run.findUniqueOrThrow({ where: { id: runId } });
    });
    runAfterCommit(after);
    return run;
  }
}

/**
 * Cancels a queued, running or waiting run inside the caller's transaction; false when it had already
 * ended. A run no attempt holds (queued, handed back, waiting) also gives its conversation's slot back;
 * a held one keeps it until its attempt has stopped.
 */
export async function cancelIn(
  tx: Prisma.TransactionClient,
  { runId, events, reason }: { runId: string; events: EventPublisher; reason: string },
  after: AfterCommit,
): Promise<boolean> {
  const at = new Date();
  // The run row is locked first, as every write of an attempt locks it: a write in flight
  // commits before this, and any later one sees the cancellation.
  const [cancelled] = await tx.$queryRawUnsafe<{ conversation_id: string; lease_owner: string | null }[]>(
    `UPDATE run SET status = 'CANCELLED', finished_at = $2 WHERE id = $1 AND status IN ('QUEUED', 'RUNNING', 'WAITING')
     RETURNING conversation_id, lease_owner`,
    runId,
    at,
  );
  if (!cancelled) return false;
  // A cancelled run applies no proposal: its pending ones are decided now. Nor does it execute
  // a tool call that waits for a decision: those are rejected.
  await tx.checkpointProposal.updateMany({
    where: { runId, status: "PENDING" },
    data: { status: "DROPPED", reason: "the run was cancelled", decidedAt: at },
  });
  const changes = [
    ...(await rejectOpenIn(tx, runId, "the run was cancelled", at)),
    ...(await endOpenSpansIn(tx, { traceId: runId, status: "CANCELLED", reason, includeRoot: true, at })),
    await endTraceIn(tx, runId, at),
  ];
  await recordRunEventById(tx, runId, "CANCELLED", { events, after });
  if (cancelled.lease_owner === null) {
    await tx.conversation.updateMany({ where: { id: cancelled.conversation_id, activeRunId: runId }, data: { activeRunId: null } });
  }
  after.push(() => {
    publishTraceChanges(events, changes);
    publishRunStatus(events, runId, "CANCELLED");
  });
  return true;
}
