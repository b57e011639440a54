// The results of one action step's calls that are known together reach the log together
// (src/runtime/loop/result-group.ts): six instant calls run concurrently finish in one turn of the
// event loop, and their six entries are one statement behind the attempt's fence, carrying their
// calls' spans and inputs. The statement is atomic: an attempt that lost its run writes none of
// them, nor their spans, and every call learns why. A result known later is not held for the others.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import type { Database } from "../../src/db/open-database.js";
import { PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { writeAfter } from "../../src/domain/transaction.js";
import { AttemptFencedError } from "../../src/runtime/ports/attempt-fence.js";
import { PrismaConversationLog, readLog } from "../../src/runtime/adapters/prisma-conversation-log.js";
import { AttemptLog } from "../../src/runtime/memory/attempt-log.js";
import { groupedResults } from "../../src/runtime/loop/result-group.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

/** The statements that write an attempt's trace or log: each carries its fence's check. */
const FENCED_WRITE = /^\s*WITH holder AS/;
const CALLS = 6;

describe.each(backends)("the results of parallel calls logged together on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const statements: string[] = [];
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }));
  });
  afterAll(async () => dispose?.());

  /** A running attempt's action step as the executor makes it: each call's span and input, then its result. */
  async function step() {
    const { runId } = await createBareRun(db.prisma, { status: "RUNNING" });
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 1, leaseOwner: "worker-a" } });
    const { conversationId } = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const fence = new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, vi.fn());
    const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events: createEventBus() });
    await recorder.traceFor(runId);
    const sink = recorder.fenced(fence);
    const write = writeAfter({ flushed: () => sink.flushed(), inOrder: sink.inOrder.bind(sink) }, fence.write);
    const log = await AttemptLog.open(new PrismaConversationLog(db.prisma), { id: runId, conversationId });
    const root = await sink.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    const turn = await sink.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 1" });
    await sink.flushed();
    const appends: boolean[] = [];
    const logResult = groupedResults(CALLS, (entries, last) => {
      appends.push(last);
      return log.append(write, entries);
    });
    /** Call `i`: its span and input, then (after `delay`, if any) its result. */
    const call = async (i: number, delay?: Promise<void>) => {
      const span = await sink.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: `execute_tool t${i}` });
      // Written behind the call, as the executor notes it (not waited for).
      sink.event(span, "TOOL_INPUT", `{"i":${i}}`).catch(() => 0);
      await delay;
      return logResult({ role: "TOOL", toolCallId: `call_${i}`, toolName: `t${i}`, content: `result ${i}` });
    };
    return { runId, conversationId, log, appends, call };
  }

  it("writes six results known together in one statement, with their calls' spans and inputs", async () => {
    const { runId, conversationId, log, appends, call } = await step();
    const from = statements.length;
    const ids = await Promise.all(Array.from({ length: CALLS }, (_, i) => call(i)));

    const sent = statements.slice(from).filter((sql) => FENCED_WRITE.test(sql));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/INSERT INTO message/);
    expect(appends).toEqual([true]);
    const stored = await readLog(db.prisma, conversationId);
    expect(stored.map((m) => [m.id, m.toolCallId, m.content, m.seq])).toEqual(
      Array.from({ length: CALLS }, (_, i) => [ids[i], `call_${i}`, `result ${i}`, i + 1]),
    );
    expect(log.entries.map((m) => m.id)).toEqual(ids);
    expect(await db.prisma.span.count({ where: { traceId: runId, kind: "TOOL_CALL" } })).toBe(CALLS);
    expect(await db.prisma.spanEvent.count({ where: { kind: "TOOL_INPUT", span: { traceId: runId } } })).toBe(CALLS);
  });

  it("refuses the whole group of an attempt that lost its run: no result, no span, each call told why", async () => {
    const { runId, conversationId, call } = await step();
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 2, leaseOwner: "worker-b" } });
    const results = await Promise.allSettled(Array.from({ length: CALLS }, (_, i) => call(i)));

    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect((result as PromiseRejectedResult).reason).toBeInstanceOf(AttemptFencedError);
    }
    expect(await readLog(db.prisma, conversationId)).toEqual([]);
    expect((await db.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount).toBe(0);
    expect(await db.prisma.span.count({ where: { traceId: runId, kind: "TOOL_CALL" } })).toBe(0);
    expect(await db.prisma.spanEvent.count({ where: { span: { traceId: runId } } })).toBe(0);
  });

  it("does not hold a result known while other calls still run", async () => {
    const { conversationId, appends, call } = await step();
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const early = Array.from({ length: CALLS - 1 }, (_, i) => call(i));
    const late = call(CALLS - 1, slow);
    // The five known now are written while the sixth still runs.
    await Promise.all(early);
    expect((await readLog(db.prisma, conversationId)).map((m) => m.toolCallId)).toEqual(Array.from({ length: CALLS - 1 }, (_, i) => `call_${i}`));
    release();
    await late;
    expect((await readLog(db.prisma, conversationId)).map((m) => m.toolCallId)).toHaveLength(CALLS);
    // The step's last result goes alone, the next turn's read may ride with it.
    expect(appends).toEqual([false, true]);
  });
});
