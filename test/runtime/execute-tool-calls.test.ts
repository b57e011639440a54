// R16: the tool calls of one turn run concurrently, each in its own span, in request order.
import { describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";
import { executeToolCalls } from "../../src/runtime/tools/execute-tool-calls.js";
import { noDatabase, testRun } from "../support/tool-context.js";

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new Error("aborted"));
    });
  });

function tool(name: string, execute: Tool["execute"], timeoutMs?: number): Tool {
  return { schema: { name, description: name, parameters: { type: "object" } }, execute, timeoutMs };
}

const slow = (name: string, ms: number) =>
  tool(name, async (args, { signal }) => {
    await sleep(ms, signal);
    return `${name} done with ${JSON.stringify(args)}`;
  });

async function run(calls: { name: string; arguments: string }[], tools: Tool[], signal = new AbortController().signal) {
  const sink = new InMemoryTraceSink();
  const parent = await sink.startSpan({ traceId: "t", kind: "TURN", name: "turn 1" });
  const started = performance.now();
  const results = await executeToolCalls({
    calls: calls.map((call, i) => ({ id: `call_${i}`, ...call })),
    tools: new Map(tools.map((t) => [t.schema.name, t])),
    sink,
    write: noDatabase,
    parent,
    run: testRun(),
    signal,
    defaultTimeoutMs: 5_000,
  });
  return { sink, results, elapsed: performance.now() - started };
}

describe("executeToolCalls", () => {
  it("runs three 200 ms tools concurrently: overlapping spans, wall time near the slowest, results in request order", async () => {
    const { sink, results, elapsed } = await run(
      [
        { name: "c", arguments: '{"n":1}' },
        { name: "a", arguments: '{"n":2}' },
        { name: "b", arguments: '{"n":3}' },
      ],
      [slow("a", 200), slow("b", 200), slow("c", 200)],
    );
    expect(results.map((r) => r.output)).toEqual(['c done with {"n":1}', 'a done with {"n":2}', 'b done with {"n":3}']);
    expect(elapsed).toBeLessThan(550);
    const spans = sink.spans.filter((s) => s.kind === "TOOL_CALL");
    expect(spans).toHaveLength(3);
    const latestStart = Math.max(...spans.map((s) => s.startedAt));
    const earliestEnd = Math.min(...spans.map((s) => s.endedAt!));
    expect(latestStart).toBeLessThan(earliestEnd);
    for (const span of spans) {
      expect(span.parentId).toBe("span-1");
      expect(span.status).toBe("OK");
      expect(span.events.map((e) => e.kind)).toEqual(["TOOL_INPUT", "TOOL_OUTPUT"]);
    }
  });

  it("turns a failing, unknown, malformed or timed-out call into an error result without aborting siblings", async () => {
    const { sink, results } = await run(
      [
        { name: "ok", arguments: "{}" },
        { name: "boom", arguments: "{}" },
        { name: "missing", arguments: "{}" },
        { name: "ok", arguments: "{not json" },
        { name: "stuck", arguments: "{}" },
      ],
      [
        slow("ok", 50),
        tool("boom", async () => {
          throw new Error("upstream returned 502");
        }),
        tool("stuck", () => new Promise(() => undefined), 100),
      ],
    );
    expect(results.map((r) => [r.isError, r.output])).toEqual([
      [false, "ok done with {}"],
      [true, "Error: upstream returned 502"],
      [true, 'Error: there is no tool named "missing".'],
      [true, "Error: the arguments of ok are not valid JSON."],
      [true, "Error: stuck timed out after 100 ms."],
    ]);
    expect(sink.spans.filter((s) => s.kind === "TOOL_CALL").map((s) => s.status)).toEqual(["OK", "ERROR", "ERROR", "ERROR", "ERROR"]);
  });

  it("stops promptly when the run is cancelled, closing every span as CANCELLED", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("cancelled")), 50);
    const { sink, results, elapsed } = await run(
      [
        { name: "long", arguments: "{}" },
        { name: "ignores", arguments: "{}" },
      ],
      [slow("long", 5_000), tool("ignores", () => new Promise(() => undefined))],
      controller.signal,
    );
    expect(elapsed).toBeLessThan(1_000);
    expect(results.every((r) => r.isError)).toBe(true);
    expect(sink.spans.filter((s) => s.kind === "TOOL_CALL").map((s) => [s.status, s.endedAt !== null])).toEqual([
      ["CANCELLED", true],
      ["CANCELLED", true],
    ]);
  });
});
