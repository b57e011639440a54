// A turn's writes on its critical path: a tool's result entering the log, and a model reply's
// span end (priced, charged, its tokens added) committing with the reply. Each is one statement
// (the log append carries the attempt fence's check inside itself), and each keeps what the
// longer writes guaranteed: the log reads back exactly what was written, a superseded attempt
// writes nothing and learns why, a price set a moment ago applies, and costs are exact.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import type { Database } from "../../src/db/open-database.js";
import { PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { priceUsage } from "../../src/domain/costs/pricing.js";
import { AttemptFencedError } from "../../src/runtime/ports/attempt-fence.js";
import { appendRows, readLog } from "../../src/runtime/adapters/prisma-conversation-log.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

describe.each(backends)("a turn's writes on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend));
    await db.migrate();
  });
  afterAll(async () => dispose?.());

  async function heldRun() {
    const { runId, ownerId } = await createBareRun(db.prisma, { status: "RUNNING" });
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 1, leaseOwner: "worker-a" } });
    const { conversationId } = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const lost = vi.fn();
    const fence = new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, lost);
    return { runId, ownerId, conversationId, fence, lost };
  }

  it("appends entries through the attempt's fence in one statement, and gives back the rows a read of the log gives", async () => {
    const { runId, conversationId, fence } = await heldRun();
    const awkward = 'quotes " and \\, a NUL \u0000, an unpaired \ud800, emoji 🧪, and \uffff';
    const transactions = vi.spyOn(db.prisma, "$transaction");
    const first = await appendRows(fence.write, { conversationId, runId, entries: [{ role: "USER", content: "Plan the week." }] });
    const written = await appendRows(fence.write, {
      conversationId,
      runId,
      entries: [
        { role: "ASSISTANT", content: null, toolCalls: [{ arguments: JSON.stringify({ title: awkward }), name: "task_list", id: "call_1" }] },
        { role: "TOOL", toolCallId: "call_1", toolName: "task_list", content: awkward },
      ],
    });
    expect(transactions).not.toHaveBeenCalled();
    transactions.mockRestore();
    const log = await readLog(db.prisma, conversationId);
    expect(log.map((message) => message.seq)).toEqual([1, 2, 3]);
    expect([...first, ...written]).toEqual(log);
    // Byte for byte, the tool calls' keys in the order a read gives them.
    expect(JSON.stringify([...first, ...written])).toBe(JSON.stringify(log));
    expect(written[1]!.content).toBe(awkward);
    expect((await db.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount).toBe(3);
  });

  it("writes nothing for an attempt that lost its run, and stops the attempt saying why", async () => {
    const { runId, conversationId, fence, lost } = await heldRun();
    await appendRows(fence.write, { conversationId, runId, entries: [{ role: "USER", content: "held" }] });
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 2, leaseOwner: "worker-b" } });
    const late = appendRows(fence.write, { conversationId, runId, entries: [{ role: "TOOL", toolCallId: "c", toolName: "t", content: "late" }] });
    await expect(late).rejects.toBeInstanceOf(AttemptFencedError);
    await expect(late).rejects.toThrow(/attempt 2 \(worker-b\) holds it now/);
    expect(lost).toHaveBeenCalledWith("LEASE_LOST", expect.any(String));
    // Known lost: nothing more is even sent.
    const statements = vi.spyOn(db.prisma, "$queryRawUnsafe");
    await expect(appendRows(fence.write, { conversationId, runId, entries: [{ role: "USER", content: "later" }] })).rejects.toBeInstanceOf(AttemptFencedError);
    expect(statements).not.toHaveBeenCalled();
    statements.mockRestore();
    expect((await readLog(db.prisma, conversationId)).map((message) => message.content)).toEqual(["held"]);
    expect((await db.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount).toBe(1);
  });

  it("ends a model call with its reply: priced at the owner's own price, charged exactly, its tokens added, attributes merged with their undo", async () => {
    const { runId, ownerId, conversationId, fence } = await heldRun();
    const model = `model-${backend}-${runId}`;
    const past = new Date(Date.now() - 60_000);
    await db.prisma.modelPrice.create({ data: { model, effectiveFrom: past, inputPerMillion: "9", outputPerMillion: "9" } });
    const own = {
      inputPerMillion: "1.2345678901",
      cachedInputPerMillion: "0.1111111111",
      outputPerMillion: "3.3333333333",
      reasoningPerMillion: "7.0000000001",
    };
    await db.prisma.modelPrice.create({ data: { principalId: ownerId, model, effectiveFrom: past, ...own } });
    const events = createEventBus();
    const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events }).fenced(fence);
    const traceId = await recorder.traceFor(runId);
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "run" });
    const call = await recorder.startSpan({ traceId, parent: root, kind: "MODEL_CALL", name: "chat", attributes: { "gen_ai.request.model": model, a: 1 } });
    const usage = { input: 1234, output: 567, cached: 89, reasoning: 45 };
    const seen: unknown[] = [];
    const transactions = vi.spyOn(db.prisma, "$transaction");
    const entry = await recorder.endSpanWith(call, { status: "OK", usage, attributes: { a: 2, b: 3 }, tokens: 1801 }, async (write, ended) => {
      seen.push({ ...ended });
      const [row] = await appendRows(write, { conversationId, runId, entries: [{ role: "ASSISTANT", content: "Done.", toolCalls: [] }] });
      seen.push({ ...ended });
      return row;
    });
    // One statement: the span's end rode in the reply's log append.
    expect(transactions).not.toHaveBeenCalled();
    transactions.mockRestore();
    expect(seen).toEqual([
      { addsTokens: true, tokensUsed: null },
      { addsTokens: true, tokensUsed: 1801 },
    ]);
    expect(entry?.content).toBe("Done.");
    const cost = priceUsage(usage, own).cost.toFixed();
    const span = await db.prisma.span.findUniqueOrThrow({ where: { id: call.id } });
    expect({ status: span.status, cost: span.cost?.toFixed(), unpriced: span.costUnpriced, attributes: span.attributes }).toEqual({
      status: "OK",
      cost,
      unpriced: false,
      attributes: { "gen_ai.request.model": model, a: 2, b: 3 },
    });
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect({ cost: run.cost.toFixed(), unpriced: run.costUnpriced, tokens: run.tokensUsed }).toEqual({ cost, unpriced: false, tokens: 1801 });
    const day = await db.prisma.principalDailyCost.findFirstOrThrow({ where: { principalId: ownerId } });
    expect(day.cost.toFixed()).toBe(cost);
    const change = await db.prisma.traceChange.findFirstOrThrow({ where: { traceId, spanId: call.id, type: "SPAN_ENDED" } });
    expect(change.spanAfter).toEqual({ status: "OK", endedAt: span.endedAt!.toISOString(), usage, cost, undo: { before: { a: 1 }, added: ["b"] } });
  });

  it("marks a model call without a price unpriced, on its span and its run, and never as zero", async () => {
    const { runId, conversationId, fence } = await heldRun();
    const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events: createEventBus() }).fenced(fence);
    const traceId = await recorder.traceFor(runId);
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "run" });
    const call = await recorder.startSpan({ traceId, parent: root, kind: "MODEL_CALL", name: "chat", attributes: { "gen_ai.request.model": "no-such-model" } });
    await recorder.endSpanWith(call, { status: "OK", usage: { input: 10, output: 5, cached: 0, reasoning: 0 }, tokens: 15 }, (write) =>
      appendRows(write, { conversationId, runId, entries: [{ role: "ASSISTANT", content: "Done.", toolCalls: [] }] }),
    );
    const span = await db.prisma.span.findUniqueOrThrow({ where: { id: call.id } });
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect([span.cost, span.costUnpriced, run.cost.toFixed(), run.costUnpriced, run.tokensUsed]).toEqual([null, true, "0", true, 15]);
  });

  it("writes nothing of a superseded attempt's reply — its span's end, charge, tokens or log entry — and stops the attempt saying why", async () => {
    const { runId, conversationId, fence, lost } = await heldRun();
    const model = `model-late-${backend}-${runId}`;
    await db.prisma.modelPrice.create({ data: { model, effectiveFrom: new Date(Date.now() - 60_000), inputPerMillion: "1", outputPerMillion: "1" } });
    const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events: createEventBus() }).fenced(fence);
    const traceId = await recorder.traceFor(runId);
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "run" });
    const call = await recorder.startSpan({ traceId, parent: root, kind: "MODEL_CALL", name: "chat", attributes: { "gen_ai.request.model": model } });
    await recorder.flushed();
    const before = await db.prisma.span.findUniqueOrThrow({ where: { id: call.id } });
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 2, leaseOwner: "worker-b" } });
    const late = recorder.endSpanWith(call, { status: "OK", usage: { input: 10, output: 5, cached: 0, reasoning: 0 }, tokens: 15 }, (write) =>
      appendRows(write, { conversationId, runId, entries: [{ role: "ASSISTANT", content: "Done.", toolCalls: [] }] }),
    );
    await expect(late).rejects.toBeInstanceOf(AttemptFencedError);
    await expect(late).rejects.toThrow(/attempt 2 \(worker-b\) holds it now/);
    expect(lost).toHaveBeenCalledWith("LEASE_LOST", expect.any(String));
    const span = await db.prisma.span.findUniqueOrThrow({ where: { id: call.id } });
    expect({ status: span.status, endedAt: span.endedAt, cost: span.cost, usage: span.usage }).toEqual({
      status: before.status,
      endedAt: null,
      cost: null,
      usage: before.usage,
    });
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect({ cost: run.cost.toFixed(), unpriced: run.costUnpriced, tokens: run.tokensUsed }).toEqual({ cost: "0", unpriced: false, tokens: 0 });
    expect(await db.prisma.traceChange.count({ where: { traceId, spanId: call.id, type: "SPAN_ENDED" } })).toBe(0);
    expect(await readLog(db.prisma, conversationId)).toEqual([]);
    expect((await db.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount).toBe(0);
  });
});
