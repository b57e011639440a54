// A model reply too large for the model's own window is data to keep, never a reason to fail the
// run: a reply whose tool-call arguments alone exceed the window (450 KB for a 32,000-token
// model) is logged byte for byte, and once its calls are answered the next request shows the
// arguments as a pointer to their evidence id, so the model is asked again and the run succeeds —
// also when the call was held for a person's decision first. A reply whose text alone exceeds the
// window is shown cut to its opening and a pointer: within its run, and to the conversation's next run.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, EvidenceDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { ScriptedModel, type ScriptStep } from "../../src/runtime/adapters/scripted-model.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

/** About 112,000 tokens of arguments: three and a half times the whole window. */
const BIG = JSON.stringify({ action: "add", title: "x", pad: "lorem ipsum dolor ".repeat(25_000) });
/** The server reports a small usage, as the real one did: only the size of the reply is odd. */
const USAGE = { input: 5, output: 5 };

/** A reply text of about 120,000 tokens. */
const HUGE_TEXT = "The findings, in full detail. ".repeat(16_000);

/** The arguments of the first call as a request shows them. */
const shownArguments = (request: ModelRequest) => {
  const step = request.messages.find((m) => m.role === "assistant" && (m.toolCalls?.length ?? 0) > 0);
  return step?.role === "assistant" ? step.toolCalls![0]!.arguments : undefined;
};

const writeReport: Tool = {
  schema: { name: "write_report", description: "writes a report", parameters: { type: "object" } },
  execute: async (args) => `report written (${JSON.stringify(args).length} characters)`,
};

describe.each(backends)("oversized replies on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const callingWith =
    (tool: string) =>
    (request: ModelRequest): ScriptStep =>
      request.messages.some((m) => m.role === "tool") ? { content: "done", usage: USAGE } : { toolCalls: [{ name: tool, arguments: BIG }], usage: USAGE };

  async function start(tool: string | ((request: ModelRequest) => ScriptStep), approvals = false) {
    const steps = typeof tool === "string" ? callingWith(tool) : tool;
    const model = new ScriptedModel({ name: "oversized", contextWindow: 32_000, steps });
    t = await startTestApp(backend, {
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-oversized-")),
        extraTools: [writeReport],
        ...(approvals && { approvals: { rules: { write_report: "always", "*": "never" } } }),
      },
    });
    return { t, model };
  }

  /** The second request showed the arguments as a pointer whose evidence is the logged original, byte for byte. */
  async function expectClearedOnce(t: TestApp, model: ScriptedModel) {
    expect(model.stepsTaken).toBe(2);
    const shown = shownArguments(model.requests[1]!)!;
    expect(shown.length).toBeLessThan(300);
    const pointer = /evidence (ev_[A-Za-z0-9]+_a0); (\d+) characters/.exec(JSON.parse(shown).cleared);
    expect(pointer?.[2]).toBe(String(BIG.length));
    const evidence = (await t.client.request(EvidenceDocument, { id: pointer![1]! })).evidence!;
    expect(evidence).toMatchObject({ kind: "TOOL_CALL_ARGUMENTS", content: BIG });
  }

  it("a reply whose arguments exceed the window is answered, then shown as a pointer: the run succeeds", async () => {
    const { t, model } = await start("task_list");
    const { run } = await admit(t.client, { question: "Plan the week" });
    const done = await settled(t.client, run.id, 60_000);
    expect(done).toMatchObject({ status: "SUCCEEDED", failureReason: null, answer: "done" });
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
    await expectClearedOnce(t, model);
  }, 90_000);

  it("a held call with such arguments waits without failing; once approved it runs and the run succeeds", async () => {
    const { t, model } = await start("write_report", true);
    const { run } = await admit(t.client, { question: "Write the report" });
    const held = await waitUntil(async () => {
      const view = expectType((await t.client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return view.status === "WAITING" && view.pendingApprovals.edges.length > 0 ? view : undefined;
    }, 60_000);
    const [approval] = held.pendingApprovals.edges.map((edge) => edge.node);
    expect(approval!.arguments).toBe(BIG);
    expect(model.stepsTaken).toBe(1);
    await t.client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" } });
    const done = await settled(t.client, run.id, 60_000);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "done" });
    expect(done.messages.edges.at(-2)?.node.content).toBe(`report written (${BIG.length} characters)`);
    await expectClearedOnce(t, model);
  }, 90_000);

  /** The cut reply text a request shows: its opening, then a pointer whose evidence is the logged original. */
  async function expectCutText(t: TestApp, request: ModelRequest) {
    const shown = request.messages.find((m) => m.role === "assistant" && m.content?.startsWith("The findings"))?.content ?? "";
    expect(shown.length).toBeLessThan(2_400);
    const pointer = /cut for length — evidence (ev_[A-Za-z0-9]+); (\d+) characters/.exec(shown);
    expect(pointer?.[2]).toBe(String(HUGE_TEXT.length));
    const evidence = (await t.client.request(EvidenceDocument, { id: pointer![1]! })).evidence!;
    expect(evidence).toMatchObject({ kind: "REPLY_TEXT", content: HUGE_TEXT });
  }

  it("a reply whose text exceeds the window, with a tool call, is shown cut in the next request: the run succeeds", async () => {
    const { t, model } = await start((request) =>
      request.messages.some((m) => m.role === "tool")
        ? { content: "done", usage: USAGE }
        : { content: HUGE_TEXT, toolCalls: [{ name: "task_list", arguments: { action: "list" } }], usage: USAGE },
    );
    const { run } = await admit(t.client, { question: "Report, then list the tasks" });
    expect(await settled(t.client, run.id, 60_000)).toMatchObject({ status: "SUCCEEDED", answer: "done" });
    expect(model.stepsTaken).toBe(2);
    await expectCutText(t, model.requests[1]!);
  }, 90_000);

  it("a final answer whose text exceeds the window is kept whole, and the conversation's next run succeeds", async () => {
    const { t, model } = await start((request) => ({
      content: request.messages.some((m) => m.role === "assistant") ? "follow-up done" : HUGE_TEXT,
      usage: USAGE,
    }));
    const { run } = await admit(t.client, { question: "Report everything" });
    expect(await settled(t.client, run.id, 60_000)).toMatchObject({ status: "SUCCEEDED", answer: HUGE_TEXT });
    const next = await admit(t.client, { question: "And in short?", conversationId: run.conversation.id });
    expect(await settled(t.client, next.run.id, 60_000)).toMatchObject({ status: "SUCCEEDED", answer: "follow-up done" });
    expect(model.stepsTaken).toBe(2);
    await expectCutText(t, model.requests[1]!);
  }, 90_000);
});
