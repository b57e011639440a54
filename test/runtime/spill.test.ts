// R10, R11, R12, R16: large tool results spill to a preview and a handle over the one stored
// copy; the model reads them back with read_spill; concurrent spills keep their own handles and
// spans; handles are released when the run ends however it ends, and by the sweeper for runs
// settled without cleanup — while the bytes stay readable in the log.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CancelRunDocument, RunSpillsDocument, SpilledMessageDocument } from "../../sdk/generated/graphql.js";
import type { ChatMessage, ModelRequest } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled as settledRun } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";
import { gateTool } from "../support/gate-tool.js";

const returning = (name: string, output: string, delayMs = 0): Tool => ({
  schema: { name, description: `returns ${output.length} characters`, parameters: { type: "object" } },
  execute: () => new Promise((resolve) => setTimeout(() => resolve(output), delayMs)),
});

const toolMessages = (request: ModelRequest) => request.messages.filter((m): m is Extract<ChatMessage, { role: "tool" }> => m.role === "tool");
const handleIn = (text: string) => /spill:\/\/[^\s"]+/.exec(text)?.[0];
const replyBody = (reply: string) => reply.slice(reply.indexOf("\n") + 1);
const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString().split(":")[1]!;

// About 5 MB of JSON: a list of records with non-ASCII text.
const records = Array.from({ length: 52_000 }, (_, i) => ({ id: i, name: `record ${i} — Zürich`, body: "x".repeat(60) }));
const bigJson = JSON.stringify(records);

describe.each(backends)("spilling large tool results on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(steps: (request: ModelRequest, i: number) => ScriptStep, tools: Tool[], spill?: { sweepIntervalMs?: number }) {
    const model = new ScriptedModel({ name: "spill", steps });
    t = await startTestApp(backend, {
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        extraTools: tools,
        leaseMs: 5_000,
        toolTimeoutMs: 10_000,
        spill,
      },
    });
    return { t, model };
  }

  const settled = (app: TestApp, runId: string, timeoutMs = 30_000) => settledRun(app.client, runId, timeoutMs);

  const spillsOf = async (app: TestApp, runId: string) =>
    expectType((await app.client.request(RunSpillsDocument, { id: runId })).node!, "Run").spills.edges.map((edge) => edge.node);

  it("shows the model a preview of 5 MB of JSON, reads items 3–5 and a byte range back exactly, and lists the handle while the run lives", async () => {
    expect(Buffer.byteLength(bigJson)).toBeGreaterThan(5_000_000);
    const held = gateTool();
    const { t, model } = await start(
      (request, i) => {
        const handle = handleIn(toolMessages(request)[0]?.content ?? "");
        if (i === 0) return { toolCalls: [{ name: "big_json", arguments: {} }] };
        if (i === 1) return { toolCalls: [{ name: "read_spill", arguments: { handle, jsonPath: "$[3:6]" } }] };
        if (i === 2) return { toolCalls: [{ name: "read_spill", arguments: { handle, range: { start: 1_000_001, end: 1_001_500 } } }] };
        if (i === 3) return { toolCalls: [{ name: "wait", arguments: {} }] };
        return { content: "Read what I needed." };
      },
      [returning("big_json", bigJson), held.tool],
    );
    const { run } = await admit(t.client, { question: "Summarise the dataset" });

    await waitFor(() => held.state.reached, 30_000);
    const [live] = await spillsOf(t, run.id);
    expect(live).toMatchObject({ tool: "big_json", size: Buffer.byteLength(bigJson), strategy: "json-items" });
    expect(live!.handle).toBe(`spill://researcher/${rawId(run.conversation.id)}/call_0_0`);
    expect(JSON.parse(live!.preview)).toEqual(records.slice(0, JSON.parse(live!.preview).length));

    // The request after the spill holds only the preview and the note.
    const shown = toolMessages(model.requests[1]!)[0]!.content;
    expect(shown.length).toBeLessThan(3_000);
    expect(shown).toContain(`[Spilled result of big_json: ${Buffer.byteLength(bigJson).toLocaleString("en-US")} bytes`);
    expect(shown).toContain(live!.handle);
    expect(shown).not.toContain("record 100 ");
    expect(JSON.stringify(model.requests[1]!.messages).length).toBeLessThan(6_000);

    // The JSON-path read returns items 3–5 exactly; the byte range is byte-exact.
    const items = toolMessages(model.requests[2]!)[1]!.content;
    expect(items.split("\n")[0]).toBe("$[3:6]: items 3–5 of 52000 in $:");
    expect(replyBody(items)).toBe(JSON.stringify(records.slice(3, 6)));
    const range = toolMessages(model.requests[3]!)[2]!.content;
    const [, from, to] = /^bytes (\d+)–(\d+) of \d+/.exec(range)!.map(Number);
    expect(from).toBeLessThanOrEqual(1_000_001);
    expect(to).toBeGreaterThanOrEqual(1_001_500);
    expect(Buffer.from(replyBody(range))).toEqual(Buffer.from(bigJson).subarray(from, to));

    held.state.open();
    const done = await settled(t, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(await spillsOf(t, run.id)).toEqual([]);
    // The trace carries the spill on the tool call's span, and never the 5 MB.
    const span = done.trace!.spans.find((s) => s.name === "execute_tool big_json")!;
    expect(span.events.map((e) => e.kind)).toEqual(["TOOL_INPUT", "SPILL", "TOOL_OUTPUT"]);
    expect(JSON.parse(span.events[1]!.preview)).toMatchObject({ handle: live!.handle, tool: "big_json", strategy: "json-items" });
    expect(span.events[2]!.size).toBeLessThan(3_000);
    // The whole result stays stored once, byte-exact, in the log.
    const message = done.messages.edges[2]!.node;
    expect(message).toMatchObject({ role: "TOOL" });
    expect(message.content).toBe(bigJson);
  });

  it("spills three results of one turn to three handles on their own spans, in request order", async () => {
    const outputs = { slow_a: "A".repeat(40_000), slow_b: "B".repeat(50_000), slow_c: "C".repeat(60_000) };
    const held = gateTool();
    const { t, model } = await start(
      (request, i) => {
        if (i === 0) return { toolCalls: ["slow_c", "slow_a", "slow_b"].map((name) => ({ name, arguments: {} })) };
        if (i === 1) return { toolCalls: toolMessages(request).map((m) => ({ name: "read_spill", arguments: { handle: handleIn(m.content), page: 2 } })) };
        if (i === 2) return { toolCalls: [{ name: "wait", arguments: {} }] };
        return { content: "done" };
      },
      [returning("slow_a", outputs.slow_a, 150), returning("slow_b", outputs.slow_b, 50), returning("slow_c", outputs.slow_c, 250), held.tool],
    );
    const { run } = await admit(t.client, { question: "Three sources" });
    await waitFor(() => held.state.reached, 15_000);

    const spills = await spillsOf(t, run.id);
    expect(new Set(spills.map((s) => s.handle)).size).toBe(3);
    expect(Object.fromEntries(spills.map((s) => [s.tool, s.size]))).toEqual({ slow_a: 40_000, slow_b: 50_000, slow_c: 60_000 });

    const shown = toolMessages(model.requests[1]!).map((m) => m.content);
    expect(shown.map((content) => content[0])).toEqual(["C", "A", "B"]);
    expect(shown.map(handleIn)).toEqual(["call_0_0", "call_0_1", "call_0_2"].map((id) => expect.stringMatching(new RegExp(`/${id}$`))));
    const reads = toolMessages(model.requests[2]!)
      .slice(3)
      .map((m) => m.content);
    expect(reads.map((reply) => reply.split("\n")[0])).toEqual([
      'page 2 of 4: bytes 16381–32762 of 60000 (end exclusive; next: {"page":3}):',
      'page 2 of 3: bytes 16381–32762 of 40000 (end exclusive; next: {"page":3}):',
      'page 2 of 4: bytes 16381–32762 of 50000 (end exclusive; next: {"page":3}):',
    ]);
    expect(reads.map((reply) => new Set(replyBody(reply)))).toEqual([new Set("C"), new Set("A"), new Set("B")]);

    held.state.open();
    const done = await settled(t, run.id);
    for (const name of ["slow_a", "slow_b", "slow_c"]) {
      const span = done.trace!.spans.find((s) => s.name === `execute_tool ${name}`)!;
      const callId = (JSON.parse(span.attributes) as Record<string, string>)["gen_ai.tool.call.id"];
      const spill = JSON.parse(span.events.find((e) => e.kind === "SPILL")!.preview) as { handle: string; tool: string };
      expect(spill).toMatchObject({ tool: name, handle: expect.stringMatching(new RegExp(`/${callId}$`)) });
    }
    // The log holds each whole result once, logged as it finished (b after 50 ms, a, then c);
    // the model was shown them in call order (above).
    expect(done.messages.edges.slice(2, 5).map((e) => e.node.content)).toEqual([outputs.slow_b, outputs.slow_a, outputs.slow_c]);
  });

  it("releases the handles of a cancelled run; the bytes stay readable and a later run is told the handle is gone", async () => {
    const text = "évidence ".repeat(5_000);
    const held = gateTool();
    const { t, model } = await start(
      (request, i) => {
        const last = request.messages.at(-1)!;
        if (last.role === "user" && last.content === "Read it again") {
          const handle = handleIn(request.messages.find((m) => m.role === "tool")!.content ?? "");
          return { toolCalls: [{ name: "read_spill", arguments: { handle, page: 1 } }] };
        }
        if (last.role === "tool" && i > 2) return { content: "The handle is gone." };
        return i === 0 ? { toolCalls: [{ name: "fetch_page", arguments: {} }] } : { toolCalls: [{ name: "wait", arguments: {} }] };
      },
      [returning("fetch_page", text), held.tool],
    );
    const { run } = await admit(t.client, { question: "Fetch and wait" });
    await waitFor(() => held.state.reached, 15_000);
    const [live] = await spillsOf(t, run.id);
    expect(live?.tool).toBe("fetch_page");

    const cancelled = await t.client.request(CancelRunDocument, { input: { runId: run.id } });
    expect(expectType(cancelled.cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
    await waitFor(() => t!.app.runtime!.worker["active"].size === 0, 10_000);
    expect(await spillsOf(t, run.id)).toEqual([]);
    const row = await t.app.db.prisma.spill.findUniqueOrThrow({ where: { handle: live!.handle } });
    expect(row.releasedAt).not.toBeNull();
    expect(row.itemStarts).toEqual([]);
    const evidence = await t.client.request(SpilledMessageDocument, { id: live!.message.id });
    expect(expectType(evidence.node!, "Message").content).toBe(text);

    const next = await admit(t.client, { conversationId: run.conversation.id, question: "Read it again" });
    expect((await settled(t, next.run.id)).status).toBe("SUCCEEDED");
    const lastRequest = model.requests.at(-1)!;
    expect(toolMessages(lastRequest)[0]!.content).toContain(`Its read-back handle ${live!.handle} was released when its run ended`);
    expect(toolMessages(lastRequest).at(-1)!.content).toBe(
      `Error: The handle ${live!.handle} was released when its run ended; the whole result stays in the conversation log.`,
    );
  });

  it("releases the handles of a failed run", async () => {
    const { t } = await start(
      (_request, i) => {
        if (i === 0) return { toolCalls: [{ name: "fetch_page", arguments: {} }] };
        throw new Error("the model server went away");
      },
      [returning("fetch_page", "lorem ipsum ".repeat(4_000))],
    );
    const { run } = await admit(t.client, { question: "Fetch" });
    const done = await settled(t, run.id);
    expect(done).toMatchObject({ status: "FAILED", failureReason: "MODEL_ERROR" });
    expect(await spillsOf(t, run.id)).toEqual([]);
    const rows = await t.app.db.prisma.spill.findMany({ where: { runId: rawId(run.id) } });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.releasedAt).not.toBeNull();
    expect(done.messages.edges[2]!.node.content).toBe("lorem ipsum ".repeat(4_000));
  });

  it("sweeps the handles of runs settled without cleanup, never a live run's", async () => {
    const held = gateTool();
    const { t } = await start(
      (request, i) => {
        const question = request.messages.find((m) => m.role === "user")!.content;
        const last = request.messages.at(-1)!;
        if (last.role === "user") return { toolCalls: [{ name: "fetch_page", arguments: {} }] };
        if (question === "stay" && toolMessages(request).length === 1) return { toolCalls: [{ name: "wait", arguments: {} }] };
        return { content: `answered ${i}` };
      },
      [returning("fetch_page", "z".repeat(40_000)), held.tool],
      { sweepIntervalMs: 100 },
    );
    const live = await admit(t.client, { question: "stay" });
    await waitFor(() => held.state.reached, 15_000);
    const ended = await admit(t.client, { question: "end" });
    expect((await settled(t, ended.run.id)).status).toBe("SUCCEEDED");
    // A worker that died after the run settled but before its cleanup left the handle live.
    const { count } = await t.app.db.prisma.spill.updateMany({ where: { runId: rawId(ended.run.id) }, data: { releasedAt: null } });
    expect(count).toBe(1);
    // From here the sweeper (every 100 ms) may release it at any moment.
    await expect.poll(() => spillsOf(t, ended.run.id), { timeout: 5_000 }).toHaveLength(0);
    // Overlapping sweeps share one: the call below may join the periodic sweep that released the
    // handle (committed, not yet resolved). Once that one is done, a sweep finds nothing to release.
    await t.app.runtime!.sweeper.sweep();
    expect(await t.app.runtime!.sweeper.sweep()).toBe(0);
    expect(await spillsOf(t, live.run.id)).toHaveLength(1);

    held.state.open();
    expect((await settled(t, live.run.id)).status).toBe("SUCCEEDED");
    expect(await spillsOf(t, live.run.id)).toEqual([]);
  });
});
