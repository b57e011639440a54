// A bound per trace (issue 42 point 5): past MAX_TRACE_RECORDS spans and events a run keeps
// running, its trace records one TRUNCATED event on the RUN span and then only span ends and
// model usage; Trace.truncated says so. Never a failed run, never an unbounded trace.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createEventBus } from "../../src/events/topics.js";
import { sumUsage } from "../../src/trace/read/trace-reads.js";
import { usageOf } from "../../src/domain/json-columns.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { type OpenAIStreamStub, type StubToolCall, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

const TRACE = `query BoundedTrace($id: ID!) { node(id: $id) { ... on Run { status trace { ... on Trace { truncated truncatedAt usage { input output cached reasoning } } } } } }`;

/** Six parallel instant built-in tool calls. */
const sixCalls = (turn: number): StubToolCall[] =>
  Array.from({ length: 6 }, (_, i) => ({
    id: `call_${turn}_${i}`,
    name: "task_list",
    fragments: [JSON.stringify({ action: "add", title: `task ${turn}.${i}` })],
  }));

async function graphql<T>(app: TestApp, query: string, variables: object): Promise<T> {
  const response = await app.app.yoga.fetch(
    new Request("http://dossier.test/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query, variables }) }),
  );
  const { data, errors } = (await response.json()) as { data: T; errors?: unknown };
  expect(errors).toBeUndefined();
  return data;
}

describe("MAX_TRACE_RECORDS", () => {
  it("defaults to 50,000, accepts any positive whole number and refuses anything else clearly", () => {
    expect(loadConfig({}).maxTraceRecords).toBe(50_000);
    expect(loadConfig({ MAX_TRACE_RECORDS: "1" }).maxTraceRecords).toBe(1);
    expect(loadConfig({ MAX_TRACE_RECORDS: "5000000000" }).maxTraceRecords).toBe(5_000_000_000);
    for (const bad of ["0", "-3", "1.5", "many"]) expect(() => loadConfig({ MAX_TRACE_RECORDS: bad })).toThrow(/MAX_TRACE_RECORDS/);
  });
});

describe.each(backends)("a run past its trace's bound on %s", (backend) => {
  it("succeeds; its trace is truncated once, keeps at most the bound, and its usage stays whole", async () => {
    let requests = 0;
    stub = closing(
      await startOpenAIStreamStub(() => {
        requests += 1;
        return requests <= 3 ? { toolCalls: sixCalls(requests) } : { text: ["All ", "done."] };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    const maxTraceRecords = 15;
    t = closing(
      await startTestApp(backend, {
        runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bound-")), maxTraceRecords },
      }),
    );
    const { run } = await admit(t.client, { question: "Plan the week." });
    const done = await settled(t.client, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "All done.", failureReason: null });

    const prisma = t.app.db.prisma;
    const traceId = dbId(run.id);
    const spans = await prisma.span.findMany({ where: { traceId }, include: { events: true } });
    const events = spans.flatMap((span) => span.events.map((event) => ({ ...event, spanKind: span.kind })));
    const truncated = events.filter((event) => event.kind === "TRUNCATED");
    expect(truncated).toHaveLength(1);
    expect(truncated[0]!.spanKind).toBe("RUN");
    // Every span and event kept, besides the TRUNCATED event itself, fits the bound.
    expect(spans.length + events.length - 1).toBeLessThanOrEqual(maxTraceRecords);
    // The run asked for far more (4 model calls, 18 tool calls with their inputs and outputs).
    const row = await prisma.trace.findUniqueOrThrow({ where: { id: traceId } });
    expect(row.records).toBeGreaterThan(maxTraceRecords);
    // Spans that were kept still ended.
    expect(spans.filter((span) => span.status === "RUNNING")).toEqual([]);

    const read = await graphql<{ node: { trace: { truncated: boolean; truncatedAt: string; usage: object } } }>(t, TRACE, { id: run.id });
    expect(read.node.trace).toMatchObject({ truncated: true, truncatedAt: truncated[0]!.at.toISOString() });
    // The stub reports 50 prompt and 10 completion tokens per request: four requests, all counted.
    expect(read.node.trace.usage).toEqual({ input: 200, output: 40, cached: 0, reasoning: 0 });
  });

  it("a run within its bound is not truncated", async () => {
    stub = closing(await startOpenAIStreamStub(() => ({ text: ["Fine."] })));
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = closing(await startTestApp(backend, { runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bound-")), maxTraceRecords: 1_000 } }));
    const { run } = await admit(t.client, { question: "Hello?" });
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    const read = await graphql<{ node: { trace: { truncated: boolean; truncatedAt: string | null } } }>(t, TRACE, { id: run.id });
    expect(read.node.trace).toMatchObject({ truncated: false, truncatedAt: null });
    expect(await t.app.db.prisma.spanEvent.count({ where: { kind: "TRUNCATED" } })).toBe(0);
  });
});

describe("a trace asked for 60,000 records with MAX_TRACE_RECORDS=50000", () => {
  // The scale check drives the recorder as a run's turns do (a run's own overhead would make it
  // minutes): 60 turns of a model call and four tool calls, 1,000 records each, events in parallel.
  const backend = backends.includes("postgres") ? "postgres" : "pglite";
  it(`keeps 50,000, is truncated once, and its usage is whole (${backend})`, { timeout: 85_000 }, async () => {
    const { db, dispose } = await openMigratedTestDatabase(backend);
    try {
      const run = await createBareRun(db.prisma, { maxTurns: 100 });
      const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events: createEventBus(), maxRecords: 50_000 });
      const traceId = await recorder.traceFor(run.runId);
      const root = await recorder.startSpan({ traceId, kind: "RUN", name: "invoke_agent researcher" });
      const attempt = await recorder.startSpan({ traceId, parent: root, kind: "ATTEMPT", name: "attempt 1" });
      const usage = { input: 100, output: 10, cached: 5, reasoning: 1 };
      for (let turn = 0; turn < 60; turn += 1) {
        const turnSpan = await recorder.startSpan({ traceId, parent: attempt, kind: "TURN", name: `turn ${turn}` });
        const call = await recorder.startSpan({ traceId, parent: turnSpan, kind: "MODEL_CALL", name: "chat stub" });
        await Promise.all(Array.from({ length: 194 }, (_, i) => recorder.event(call, "THINKING", `step ${i}`)));
        await recorder.endSpan(call, { status: "OK", usage });
        const tools = await Promise.all(
          Array.from({ length: 4 }, (_, i) => recorder.startSpan({ traceId, parent: turnSpan, kind: "TOOL_CALL", name: `task_list ${i}` })),
        );
        await Promise.all(tools.flatMap((tool) => Array.from({ length: 200 }, (_, i) => recorder.event(tool, i % 2 ? "TOOL_OUTPUT" : "TOOL_INPUT", `${i}`))));
        await Promise.all(tools.map((tool) => recorder.endSpan(tool, { status: "OK" })));
        await recorder.endSpan(turnSpan, { status: "OK" });
      }
      await recorder.endSpan(attempt, { status: "OK" });
      await recorder.endSpan(root, { status: "OK" });

      const trace = await db.prisma.trace.findUniqueOrThrow({ where: { id: traceId } });
      expect(trace.truncatedAt).not.toBeNull();
      const [spans, events, truncated] = await Promise.all([
        db.prisma.span.findMany({ where: { traceId }, select: { usage: true, status: true } }),
        db.prisma.spanEvent.count({ where: { span: { traceId } } }),
        db.prisma.spanEvent.findMany({ where: { span: { traceId }, kind: "TRUNCATED" }, select: { spanId: true } }),
      ]);
      expect(truncated).toEqual([{ spanId: root.id }]);
      expect(spans.length + events - 1).toBe(50_000);
      expect(spans.filter((span) => span.status === "RUNNING")).toEqual([]);
      expect(sumUsage(spans.map((span) => usageOf(span.usage)))).toEqual({ input: 6_000, output: 600, cached: 300, reasoning: 60 });
    } finally {
      await dispose();
    }
  });
});
