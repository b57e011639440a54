// R16: the tool calls of one turn run concurrently, each in its own span, in request order; only
// the reply's first maxPerReply execute, at most maxConcurrency at once.
import { describe, expect, it } from "vitest";
import { type Tool, ToolError } from "../../src/runtime/ports/tool.js";
import type { Logger } from "../../src/logger.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";
import { executeToolCalls, overLimitResult, type ToolCallLimits, type ToolGate } from "../../src/runtime/tools/execute-tool-calls.js";
import { noDatabase, testRun } from "../support/tool-context.js";
import { warningLogger } from "../support/warning-logger.js";

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

type Extra = { limits?: ToolCallLimits; gate?: ToolGate; logger?: Logger };

async function run(calls: { name: string; arguments: string }[], tools: Tool[], signal = new AbortController().signal, extra: Extra = {}) {
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
    ...extra,
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
          throw new ToolError("upstream returned 502");
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

  it("tells the model only that a built-in tool failed inside Dossier, and logs the error in full; an MCP call that failed on the way says how", async () => {
    const internal = new Error("Invalid `prisma.publicationVersion.findFirst()` invocation in\n/srv/dossier/src/domain/research/publication-service.ts:212:7");
    const logged: { message: string; fields?: Record<string, unknown> }[] = [];
    const logger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: (message, fields) => logged.push({ message, fields }) };
    const mcp: Tool = {
      ...tool("mcp__search__find", async () => {
        throw new Error("connect ECONNREFUSED search.internal.example:443");
      }),
      mcpServer: { serverId: "s1", serverName: "search", requireApproval: false },
    };
    const { sink, results } = await run(
      [
        { name: "read_material", arguments: "{}" },
        { name: "mcp__search__find", arguments: "{}" },
      ],
      [
        tool("read_material", async () => {
          throw internal;
        }),
        mcp,
      ],
      undefined,
      { logger },
    );
    expect(results.map((r) => [r.isError, r.output])).toEqual([
      [true, "Error: read_material failed inside Dossier; the server's log has the details. Try again later, or go on without this call."],
      [
        true,
        'Error: mcp__search__find failed: the connection to the MCP server "search" failed; the server\'s log has the details. Try again later, or go on without this call.',
      ],
    ]);
    const shown = sink.spans.flatMap((s) => s.events.map((e) => JSON.stringify(e)));
    expect(shown.join("\n")).not.toMatch(/publication-service\.ts|search\.internal/);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.fields).toMatchObject({ runId: testRun().id, tool: "read_material", toolCallId: "call_0" });
    expect(String(logged[0]!.fields!.error)).toContain("/srv/dossier/src/domain/research/publication-service.ts:212:7");
  });

  it("a cancelled run's step ends once its tools have stopped, each within its own timeout; a result returned after the stop is logged as such", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("cancelled")), 50);
    const order: string[] = [];
    // Winds down for 300 ms once aborted, and returns what it did meanwhile.
    const windsDown = tool("winds_down", (_args, { signal }) => {
      return new Promise((resolve) => {
        signal.addEventListener("abort", () => setTimeout(() => (order.push("winds_down stopped"), resolve("rolled back 3 of 5 hosts")), 300));
      });
    });
    const { logger, warnings } = warningLogger();
    const { sink, results } = await run(
      [
        { name: "long", arguments: "{}" },
        { name: "winds_down", arguments: "{}" },
        { name: "ignores", arguments: "{}" },
      ],
      [slow("long", 5_000), windsDown, tool("ignores", () => new Promise(() => undefined), 600)],
      controller.signal,
      { logger },
    );
    order.push("step ended");
    expect(order).toEqual(["winds_down stopped", "step ended"]);
    expect(results.map((r) => [r.cancelled, r.output])).toEqual(results.map(() => [true, "Error: the run was stopped during this call."]));
    expect(sink.spans.filter((s) => s.kind === "TOOL_CALL").map((s) => [s.status, s.endedAt !== null])).toEqual([
      ["CANCELLED", true],
      ["CANCELLED", true],
      ["CANCELLED", true],
    ]);
    expect(warnings.map(([message, fields]) => [message, fields?.tool, fields?.output])).toEqual([
      ["a tool call returned after its run was stopped; its result is not the run's", "winds_down", "rolled back 3 of 5 hosts"],
      ["a tool call had not stopped by its timeout after its run was stopped; it is left behind", "ignores", undefined],
    ]);
  });

  describe("limits", () => {
    /** A tool that counts its executions and the most running at once; call i takes longer the smaller i is. */
    function counting() {
      const seen = { executed: 0, running: 0, peak: 0 };
      const counted = tool("count", async (args) => {
        const { i } = args as { i: number };
        seen.executed += 1;
        seen.running += 1;
        seen.peak = Math.max(seen.peak, seen.running);
        await sleep(5 + ((20 - i) % 7) * 3);
        seen.running -= 1;
        return `counted ${i}`;
      });
      return { seen, counted };
    }
    const calls = (n: number) => Array.from({ length: n }, (_, i) => ({ name: "count", arguments: JSON.stringify({ i }) }));

    it("runs at most maxConcurrency calls at once and keeps the results in request order", async () => {
      const { seen, counted } = counting();
      const { results } = await run(calls(20), [counted], undefined, { limits: { maxPerReply: 64, maxConcurrency: 3 } });
      expect(seen.executed).toBe(20);
      expect(seen.peak).toBe(3);
      expect(results.map((r) => r.output)).toEqual(Array.from({ length: 20 }, (_, i) => `counted ${i}`));
    });

    it("executes only the first maxPerReply calls; the others get an error result, pass no gate and end their spans in ERROR", async () => {
      const { seen, counted } = counting();
      const gated: string[] = [];
      const gate: ToolGate = async (call) => {
        gated.push(call.id);
        return { type: "execute" };
      };
      const { sink, results } = await run(calls(10), [counted], undefined, { limits: { maxPerReply: 4, maxConcurrency: 8 }, gate });
      expect(seen.executed).toBe(4);
      expect(gated).toEqual(["call_0", "call_1", "call_2", "call_3"]);
      expect(results.map((r) => [r.isError, r.output])).toEqual([
        ...Array.from({ length: 4 }, (_, i) => [false, `counted ${i}`]),
        ...Array.from({ length: 6 }, (_, i) => [true, overLimitResult(4, i + 5, 10)]),
      ]);
      expect(results[4]!.output).toBe(
        "Error: not executed: a reply may ask for at most 4 tool calls, and this was call 5 of 10. Ask again in your next reply for the calls you still need.",
      );
      const spans = sink.spans.filter((s) => s.kind === "TOOL_CALL");
      expect(spans.map((s) => s.status)).toEqual([...Array(4).fill("OK"), ...Array(6).fill("ERROR")]);
      expect(spans[9]!.events.map((e) => e.kind)).toEqual(["TOOL_INPUT", "ERROR"]);
    });

    it("bounds a reply without limits given by the defaults: 64 calls execute, 8 at once", async () => {
      const { seen, counted } = counting();
      const { results } = await run(calls(100), [counted]);
      expect(seen.executed).toBe(64);
      expect(seen.peak).toBe(8);
      expect(results.filter((r) => r.isError)).toHaveLength(36);
    });

    it("starts no call still waiting for its turn once the run is stopped", async () => {
      const { seen, counted } = counting();
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error("cancelled")), 3);
      const { sink, results } = await run(calls(20), [counted], controller.signal, { limits: { maxPerReply: 64, maxConcurrency: 2 } });
      expect(seen.executed).toBe(2);
      expect(results.every((r) => r.cancelled)).toBe(true);
      expect(sink.spans.filter((s) => s.kind === "TOOL_CALL")).toHaveLength(2);
    });
  });
});
