// One model reply's tool calls are bounded, whatever the model asks for: of a reply with 200
// calls, only the first MAX_TOOL_CALLS_PER_REPLY (64) execute, at most TOOL_MAX_CONCURRENCY (8) at
// once; each of the others is answered with an error result the model reads, and the run goes on
// to its answer. A call past the limit never asks a person for approval.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { overLimitResult } from "../../src/runtime/tools/execute-tool-calls.js";
import { admit } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const CALLS = 200;
const LIMIT = 64;
const CONCURRENCY = 8;

/** A tool that counts its executions and the most of them running at once. */
function probe() {
  const seen = { executed: 0, running: 0, peak: 0 };
  const tool: Tool = {
    schema: { name: "probe", description: "probe something", parameters: { type: "object" } },
    async execute(args) {
      seen.executed += 1;
      seen.running += 1;
      seen.peak = Math.max(seen.peak, seen.running);
      // Later calls finish sooner: a result's place must not depend on when it was known.
      await new Promise((resolve) => setTimeout(resolve, 40 - ((args as { i: number }).i % 8) * 5));
      seen.running -= 1;
      return `probed ${(args as { i: number }).i}`;
    },
  };
  return { seen, tool };
}

const manyCalls = () => callTools(...Array.from({ length: CALLS }, (_, i) => ({ name: "probe", arguments: { i } })));

describe("a reply's tool calls", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(tool: Tool, settings: { approvals?: Record<string, "always" | "never">; maxPerReply?: number } = {}) {
    t = await startTestApp("pglite", {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-call-limits-")),
        extraTools: [tool],
        ...(settings.approvals && { approvals: { rules: settings.approvals } }),
        ...(settings.maxPerReply && { toolCallLimits: { maxPerReply: settings.maxPerReply } }),
      },
    });
    return t;
  }

  it("of 200, the first 64 execute, at most 8 at once; the others get an error result in their place and the run succeeds", async () => {
    const { seen, tool } = probe();
    const t = await start(tool);
    const { run } = await admit(t.client, { question: manyCalls() });
    const done = await settled(t.client, run.id, 60_000);
    expect(done.status).toBe("SUCCEEDED");
    expect(seen.executed).toBe(LIMIT);
    expect(seen.peak).toBeLessThanOrEqual(CONCURRENCY);
    expect(seen.peak).toBeGreaterThan(1);
    // The model read every result, in the order it asked for the calls.
    const expected = Array.from({ length: CALLS }, (_, i) => (i < LIMIT ? `probed ${i}` : overLimitResult(LIMIT, i + 1, CALLS)));
    expect(done.answer!.split("\n---\n")).toEqual(expected);
    // Each call has its span; those past the limit end in ERROR and say why.
    const spans = done.trace!.spans.filter((span) => span.kind === "TOOL_CALL");
    expect(spans).toHaveLength(CALLS);
    const refused = spans.filter((span) => span.events.some((event) => event.kind === "ERROR" && event.preview.includes("not executed")));
    expect(refused).toHaveLength(CALLS - LIMIT);
    expect(refused.every((span) => span.status === "ERROR")).toBe(true);
  }, 120_000);

  it("past the limit (here set to 50), a call of a tool that needs approval is answered with the error, and asks no person", async () => {
    const { seen, tool } = probe();
    const t = await start(tool, { approvals: { probe: "always", "*": "never" }, maxPerReply: 50 });
    const { run } = await admit(t.client, { question: manyCalls() });
    const waiting = await waitUntil(
      async () => {
        const view = (await t.client.runTrace(run.id))!;
        return view.status === "WAITING" ? view : undefined;
      },
      60_000,
      250,
    );
    const events = waiting.trace!.spans.flatMap((span) => span.events);
    expect(events.filter((event) => event.kind === "APPROVAL_REQUESTED")).toHaveLength(50);
    const refused = events.filter((event) => event.kind === "ERROR" && event.preview.includes("not executed"));
    expect(refused).toHaveLength(CALLS - 50);
    expect(refused[0]!.preview).toContain("at most 50 tool calls");
    expect(seen.executed).toBe(0);
  }, 120_000);
});
