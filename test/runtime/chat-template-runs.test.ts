// Every request real runs send is one a strict chat template accepts (test/support/chat-template.ts):
// a workspace run with a material answered by the offline demo model, a second run of its
// conversation, a long run whose history is summarised, a follow-up after a run interrupted mid
// tool call, and a follow-up after a run that failed before any reply. The requests are read back
// as their model-call spans recorded them; where the model kept a copy, it is what it was sent.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { AdmitRunDocument, SpanRequestDocument } from "../../sdk/generated/graphql.js";
import { createDemoModel, DEMO_LABEL } from "../../src/runtime/adapters/demo-model.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { ChatMessage, ModelRequest } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { chatTemplateViolations } from "../support/chat-template.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { questionOf } from "../support/requests.js";
import { type RunView, settled, spanStarted } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MATERIAL = "Northvolt Ett in Skellefteå produced 16 GWh in 2024; ACC and Verkor follow in France.";

/** The run's model requests in the order they were made, as their spans record them. */
async function requestsOf(client: DossierClient, run: RunView): Promise<ChatMessage[][]> {
  const calls = run.trace!.spans.filter((span) => span.kind === "MODEL_CALL").sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
  return Promise.all(
    calls.map(async (span) => JSON.parse(expectType((await client.request(SpanRequestDocument, { id: span.id })).node!, "Span").request!) as ChatMessage[]),
  );
}

async function expectStrictOrder(client: DossierClient, run: RunView): Promise<ChatMessage[][]> {
  const requests = await requestsOf(client, run);
  expect(requests.length).toBeGreaterThan(0);
  for (const messages of requests) expect(chatTemplateViolations(messages)).toEqual([]);
  return requests;
}

const users = (messages: ChatMessage[]) => messages.filter((m) => m.role === "user").map((m) => m.content ?? "");

describe("requests in a strict chat template's role order", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("the offline demo answers a workspace run's question, reads its material, and a second run's question in turn", async () => {
    t = await startTestApp("pglite", { runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-demo-")) } });
    const workspace = await createWorkspace(t.client);
    const material = await publish(t.client, { title: "EU cell plants", content: MATERIAL });
    const question = "Who makes battery cells in Europe?";
    const first = await admit(t.client, {
      workspaceId: workspace.id,
      question,
      materials: [{ publicationId: material.version.publication.id, version: 1 }],
    });
    const firstDone = await settled(t.client, first.run.id);
    expect(firstDone.status).toBe("SUCCEEDED");
    const answer = firstDone.answer!;
    expect(answer.startsWith(DEMO_LABEL)).toBe(true);
    expect(answer).toContain(`You asked: "${question}"`);
    expect(answer).toContain('I read "EU cell plants" (version 1, as of');
    expect(answer).toContain(`It begins: "${MATERIAL}"`);
    expect(answer).not.toContain("<workspace-context>");
    // The demo called read_material for the selected version; the span names the model asked for.
    const tools = firstDone.trace!.spans.filter((span) => span.kind === "TOOL_CALL").map((span) => span.name);
    expect(tools.sort()).toEqual(["execute_tool read_material", "execute_tool task_list"]);
    const call = firstDone.trace!.spans.find((span) => span.kind === "MODEL_CALL")!;
    expect(JSON.parse(call.attributes)).toMatchObject({ "gen_ai.request.model": "demo", scripted: true });
    const [opening] = await expectStrictOrder(t.client, firstDone);
    expect(opening!.map((m) => m.role)).toEqual(["system", "user"]);
    expect(opening![1]!.content).toMatch(/^<workspace-context>[\s\S]*EU cell plants[\s\S]*<\/workspace-context>\n\nWho makes battery cells in Europe\?$/);

    const followUp = "And which of them build in France?";
    const second = await admit(t.client, { workspaceId: workspace.id, conversationId: first.run.conversation.id, question: followUp });
    const secondDone = await settled(t.client, second.run.id);
    expect(secondDone.answer).toContain(`You asked: "${followUp}"`);
    const [continued] = await expectStrictOrder(t.client, secondDone);
    // Each run's context stays with its own question.
    expect(users(continued!).map((text) => [text.startsWith("<workspace-context>"), questionOf(text)])).toEqual([
      [true, question],
      [true, followUp],
    ]);
  }, 120_000);

  it("a run whose history is summarised keeps its context, and follow-ups after an interrupted and a failed run read in order", async () => {
    let aborted = false;
    let thought = 0;
    const hold: Tool = {
      schema: { name: "hold", description: "waits until stopped", parameters: { type: "object" } },
      execute: (_args, { signal }) =>
        new Promise((_resolve, reject) => signal.addEventListener("abort", () => ((aborted = true), reject(new Error("stopped"))))),
    };
    const scripts: Record<string, (since: ChatMessage[]) => ScriptStep> = {
      // Each step thinks aloud at length, so the history outgrows the window and is summarised
      // (and the request no longer shows every step: they are counted here).
      "Think it through": () => {
        const step = thought++;
        return step < 16
          ? { content: `Step ${step}: ${"reasoning ".repeat(260)}`, toolCalls: [{ name: "task_list", arguments: { action: "list" } }] }
          : { content: "Thought through." };
      },
      "Hold on": () => ({ toolCalls: [{ name: "hold", arguments: {} }] }),
      "Answer this instead": () => ({ content: "Answered instead." }),
      "Fail at once": () => {
        throw new Error("the model server is gone");
      },
      "Try again": () => ({ content: "Tried again." }),
    };
    const model = new ScriptedModel({
      name: "strict",
      contextWindow: 20_000,
      steps: (request: ModelRequest) => {
        const asked = request.messages.findLastIndex((m) => m.role === "user");
        const question = questionOf(request.messages[asked]!.content);
        const script = scripts[question];
        return script ? script(request.messages.slice(asked + 1)) : { content: `No script for: ${question}` };
      },
    });
    t = await startTestApp("pglite", {
      runtime: { model, extraTools: [hold], leaseMs: 2_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-strict-")) },
    });
    const client = t.client;
    const workspace = await createWorkspace(client);
    const limits = { maxTurns: 40, tokenBudget: 10_000_000 };

    const long = await settled(client, (await admit(client, { workspaceId: workspace.id, question: "Think it through", limits })).run.id, 90_000);
    expect({ status: long.status, failure: long.failureReason }).toEqual({ status: "SUCCEEDED", failure: null });
    expect(long.messages.edges.map((e) => e.node.role)).toContain("SUMMARY");
    const summarised = await expectStrictOrder(client, long);
    // Every request, the summarised ones too, carries the run's context right before its question.
    for (const messages of summarised) expect(users(messages).at(-1)).toMatch(/<workspace-context>[\s\S]*<\/workspace-context>\n\nThink it through$/);
    expect(summarised.at(-1)![1]!.content).toMatch(/^<system-reminder>/);

    const held = await admit(client, { workspaceId: workspace.id, question: "Hold on" });
    await spanStarted(client, held.run.id, "TOOL_CALL");
    const interrupting = await client.request(AdmitRunDocument, {
      input: { workspaceId: workspace.id, conversationId: held.run.conversation.id, question: "Answer this instead", multitask: "INTERRUPT" },
    });
    const instead = await settled(client, expectType(interrupting.admitRun, "AdmitRunSuccess").run.id);
    expect(aborted).toBe(true);
    expect(instead).toMatchObject({ status: "SUCCEEDED", answer: "Answered instead." });
    const [afterInterrupt] = await expectStrictOrder(client, instead);
    // The interrupted call is answered by its repair note, and a neutral note ends the stopped run.
    expect(afterInterrupt!.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(afterInterrupt![3]!.content).toMatch(/may or may not have executed/);
    expect(afterInterrupt![4]!.content).toMatch(/^\[no answer: the run ended here/);

    const failing = await admit(client, { workspaceId: workspace.id, question: "Fail at once" });
    expect(await settled(client, failing.run.id)).toMatchObject({ status: "FAILED", failureReason: "MODEL_ERROR" });
    const retried = await settled(
      client,
      (await admit(client, { workspaceId: workspace.id, conversationId: failing.run.conversation.id, question: "Try again" })).run.id,
    );
    expect(retried).toMatchObject({ status: "SUCCEEDED", answer: "Tried again." });
    const [afterFailure] = await expectStrictOrder(client, retried);
    // The unanswered question and the new one, each after its context, in one user message.
    expect(afterFailure!.map((m) => m.role)).toEqual(["system", "user"]);
    expect(afterFailure![1]!.content).toMatch(/^<workspace-context>[\s\S]*\n\nFail at once\n\n<workspace-context>[\s\S]*\n\nTry again$/);

    // What the spans recorded is what the model was sent.
    const sent = model.requests.map((request) => JSON.stringify(request.messages));
    for (const messages of [...summarised, afterInterrupt!, afterFailure!]) expect(sent).toContain(JSON.stringify(messages));
  }, 240_000);
});
