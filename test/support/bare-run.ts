// A run row written straight to the database, with its own principal and conversation: for tests
// of the trace recorder and span storage, which need a run to hang a trace on and nothing of
// admission, claiming or the worker.
import type { Database } from "../../src/db/open-database.js";

export interface BareRunOptions {
  status?: "QUEUED" | "RUNNING";
  maxTurns?: number;
}

export async function createBareRun(prisma: Database["prisma"], options: BareRunOptions = {}): Promise<{ ownerId: string; runId: string }> {
  const owner = await prisma.principal.create({ data: { name: "p" } });
  const conversation = await prisma.conversation.create({ data: { ownerId: owner.id, title: "c" } });
  const run = await prisma.run.create({
    data: {
      ownerId: owner.id,
      conversationId: conversation.id,
      agent: "researcher",
      question: "q",
      status: options.status ?? "QUEUED",
      maxTurns: options.maxTurns ?? 1,
      tokenBudget: 1,
      deadlineSeconds: 60,
      deadlineAt: new Date(Date.now() + 60_000),
      configuration: {},
    },
  });
  return { ownerId: owner.id, runId: run.id };
}
