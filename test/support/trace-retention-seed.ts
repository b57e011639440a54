// Ended runs with a whole trace (spans, events, replay log) and a log entry, written straight to
// the database, for the trace retention tests: a fake clock needs traces that ended at given times.
import type { PrismaClient } from "../../src/generated/prisma/client.js";

export type SeededTrace = { runId: string; traceId: string; spanIds: string[]; messageId: string };

let counter = 0;

/** A principal and a conversation its seeded runs belong to. */
export async function seedOwner(prisma: PrismaClient, id = `owner-${++counter}`): Promise<{ principalId: string; conversationId: string }> {
  await prisma.principal.create({ data: { id, name: id } });
  const conversation = await prisma.conversation.create({ data: { ownerId: id, title: "retention" } });
  return { principalId: id, conversationId: conversation.id };
}

/**
 * A SUCCEEDED run whose trace ended at `endedAt`: a RUN span with `children` MODEL_CALL spans
 * (attributes and usage), each with `eventsPerSpan` events, and one replay-log row per change.
 */
export async function seedEndedRun(
  prisma: PrismaClient,
  owner: { principalId: string; conversationId: string },
  { endedAt, workspaceId = null, children = 2, eventsPerSpan = 2 }: { endedAt: Date; workspaceId?: string | null; children?: number; eventsPerSpan?: number },
): Promise<SeededTrace> {
  const runId = `run-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
  const startedAt = new Date(endedAt.getTime() - 60_000);
  await prisma.run.create({
    data: {
      id: runId,
      ownerId: owner.principalId,
      conversationId: owner.conversationId,
      workspaceId,
      agent: "researcher",
      question: "How many cells?",
      status: "SUCCEEDED",
      maxTurns: 5,
      tokenBudget: 10_000,
      deadlineSeconds: 600,
      deadlineAt: endedAt,
      configuration: {},
      answer: "Forty.",
      tokensUsed: 120,
      startedAt,
      finishedAt: endedAt,
    },
  });
  const conversation = await prisma.conversation.update({ where: { id: owner.conversationId }, data: { messageCount: { increment: 1 } } });
  const message = await prisma.message.create({
    data: { conversationId: owner.conversationId, seq: conversation.messageCount, role: "USER", content: "How many cells?", runId },
  });
  await prisma.trace.create({ data: { id: runId, runId, endedAt, createdAt: startedAt } });
  const root = await prisma.span.create({
    data: { traceId: runId, kind: "RUN", name: "run", status: "OK", attributes: { agent: "researcher" }, startedAt, endedAt },
  });
  const spanIds = [root.id];
  let seq = 0;
  const changes: { traceId: string; seq: number; type: "SPAN_STARTED" | "EVENT_APPENDED"; spanId: string; at: Date }[] = [];
  changes.push({ traceId: runId, seq: ++seq, type: "SPAN_STARTED", spanId: root.id, at: startedAt });
  for (let c = 0; c < children; c++) {
    const span = await prisma.span.create({
      data: {
        traceId: runId,
        parentId: root.id,
        kind: "MODEL_CALL",
        name: `model ${c}`,
        status: "OK",
        attributes: { request: { messages: ["secret prompt"] } },
        usage: { input: 50, output: 10, cached: 0, reasoning: 0 },
        startedAt,
        endedAt,
      },
    });
    spanIds.push(span.id);
    changes.push({ traceId: runId, seq: ++seq, type: "SPAN_STARTED", spanId: span.id, at: startedAt });
    for (let e = 0; e < eventsPerSpan; e++) {
      await prisma.spanEvent.create({
        data: { spanId: span.id, seq: ++seq, kind: "THINKING", payload: "thinking hard", preview: "thinking hard", payloadSize: 13, at: startedAt },
      });
      changes.push({ traceId: runId, seq, type: "EVENT_APPENDED", spanId: span.id, at: startedAt });
    }
  }
  await prisma.traceChange.createMany({ data: changes });
  await prisma.trace.update({ where: { id: runId }, data: { lastSeq: seq } });
  return { runId, traceId: runId, spanIds, messageId: message.id };
}

/** How many rows of each trace table the trace still has. */
export async function traceRows(prisma: PrismaClient, traceId: string) {
  const [spans, events, changes] = await Promise.all([
    prisma.span.count({ where: { traceId } }),
    prisma.spanEvent.count({ where: { span: { traceId } } }),
    prisma.traceChange.count({ where: { traceId } }),
  ]);
  return { spans, events, changes };
}
