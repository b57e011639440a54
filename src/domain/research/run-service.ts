// Stopping runs. Cancellation is immediate for the record: the run is CANCELLED at once, and
// the worker executing it (on any instance) stops its model and tool calls and closes its spans.
import { publishRunStatus, type EventPublisher } from "../../events/topics.js";
import type { PrismaClient, Run } from "../../generated/prisma/client.js";
import { NotFoundError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";

export class RunService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher }) {}

  /** Cancels a queued or running run; a run already settled is returned as it is. */
  async cancelRun(actor: Actor, runId: string): Promise<Run> {
    const cancelled = await this.deps.prisma.run.updateMany({
      where: { id: runId, ownerId: actor.principalId, status: { in: ["QUEUED", "RUNNING"] } },
      data: { status: "CANCELLED", finishedAt: new Date() },
    });
    const run = await this.deps.prisma.run.findFirst({ where: { id: runId, ownerId: actor.principalId } });
    if (!run) throw new NotFoundError("Run", runId);
    if (cancelled.count > 0) publishRunStatus(this.deps.events, runId, "CANCELLED");
    return run;
  }
}
