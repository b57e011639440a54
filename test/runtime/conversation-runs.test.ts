// R1, R7, R18 in one instance, on every backend: a follow-up that interrupts a run mid tool call
// stops that call and answers its own question over a log that still reads as one conversation;
// a cancellation recorded after the final reply but before settling is final; and a NUL or an
// unpaired surrogate anywhere a run meets text is stored exactly, shown safely, and fails nothing.
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AdmitRunDocument, CancelRunDocument, RunMaterialsDocument, WorkspaceCheckpointDocument, WorkspaceLinksDocument } from "../../sdk/generated/graphql.js";
import type { ChatMessage, ModelRequest } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { createHttpFetchTool } from "../../src/runtime/tools/http-fetch.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { questionOf } from "../support/requests.js";
import { settled, spanStarted } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Script = (since: ChatMessage[], request: ModelRequest) => ScriptStep;

/** Routes each request to the script of the question it answers (the last user message). */
function byQuestion(scripts: Record<string, Script>): ScriptedModel {
  return new ScriptedModel({
    name: "conversation",
    steps: (request) => {
      const asked = request.messages.findLastIndex((m) => m.role === "user");
      const question = questionOf(request.messages[asked]!.content);
      const script = scripts[question];
      if (!script) return { content: `No script for: ${question}` };
      return script(request.messages.slice(asked + 1), request);
    },
  });
}

/** Every tool call of a request is answered (by a result or a repair note) before the next user or assistant message. */
function expectChatOrder(messages: ChatMessage[]): void {
  let open: string[] = [];
  for (const m of messages) {
    if (m.role === "tool") {
      expect(open).toContain(m.toolCallId);
      open = open.filter((id) => id !== m.toolCallId);
      continue;
    }
    expect(open).toEqual([]);
    if (m.role === "assistant") open = (m.toolCalls ?? []).map((call) => call.id);
  }
}

describe.each(backends)("runs of one conversation on %s", (backend) => {
  let t: TestApp | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await cleanup?.();
    cleanup = undefined;
  });

  async function start(model: ScriptedModel, extraTools: Tool[] = []) {
    t = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-conv-")), extraTools, leaseMs: 2_000, toolTimeoutMs: 20_000 },
    });
    return t;
  }

  it("INTERRUPT cancels the run mid tool call, aborts the call, and the follow-up answers its own question", async () => {
    let aborted = false;
    const hold: Tool = {
      schema: { name: "hold", description: "waits until stopped", parameters: { type: "object" } },
      execute: (_args, { signal }) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => {
            aborted = true;
            reject(new Error("stopped"));
          }),
        ),
    };
    const model = byQuestion({
      "Transfer the funds": (since) => (since.length === 0 ? { toolCalls: [{ name: "hold", arguments: {} }] } : { content: "Transferred." }),
      "Stop, answer this instead": () => ({ content: "Answering the follow-up." }),
    });
    const t = await start(model, [hold]);
    const { run: first } = await admit(t.client, { question: "Transfer the funds" });
    await spanStarted(t.client, first.id, "TOOL_CALL");

    const interrupted = await t.client.request(AdmitRunDocument, {
      input: { conversationId: first.conversation.id, question: "Stop, answer this instead", multitask: "INTERRUPT" },
    });
    const second = expectType(interrupted.admitRun, "AdmitRunSuccess").run;
    const firstDone = await settled(t.client, first.id);
    const secondDone = await settled(t.client, second.id);

    expect(firstDone).toMatchObject({ status: "CANCELLED", answer: null });
    expect(aborted).toBe(true);
    expect(firstDone.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(secondDone).toMatchObject({ status: "SUCCEEDED", answer: "Answering the follow-up." });
    expect(secondDone.trace!.spans.filter((s) => s.status !== "OK")).toEqual([]);
    // The follow-up started only once the interrupted attempt had stopped and acknowledged.
    const firstAfter = await settled(t.client, first.id);
    expect(firstAfter.attempts.map((a) => a.outcome)).toEqual(["COMPLETED"]);
    expect(Date.parse(firstAfter.attempts[0]!.endedAt!)).toBeLessThanOrEqual(Date.parse(secondDone.attempts[0]!.startedAt));
    // The follow-up's request: the interrupted call answered by its repair note right after it,
    // then the follow-up's question last — an order a strict chat-completions server accepts.
    const request = model.requests.at(-1)!.messages;
    expectChatOrder(request);
    const users = request.filter((m) => m.role === "user").map((m) => m.content);
    expect(users).toEqual(["Transfer the funds", "Stop, answer this instead"]);
    const callAt = request.findIndex((m) => m.role === "assistant" && (m.toolCalls ?? []).length > 0);
    expect(request[callAt + 1]).toMatchObject({ role: "tool" });
    expect(String(request[callAt + 1]!.content)).toMatch(/may or may not have executed/);
    // Each run's log entries stay its own.
    expect(firstDone.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT"]);
  });

  it("a cancellation recorded after the final reply but before settling is final: nothing published, nothing applied", async () => {
    const model = byQuestion({
      "Summarise the market": (since) =>
        since.length === 0
          ? { toolCalls: [{ name: "propose_checkpoint", arguments: { summary: "Prices fell 12 %." } }] }
          : { content: "Prices fell 12 % this year." },
    });
    const t = await start(model);
    const workspace = await createWorkspace(t.client);
    const executor = t.app.runtime!.executor;
    const execute = executor.execute.bind(executor);
    let cancel: Promise<unknown> | undefined;
    executor.execute = async (attempt) => {
      const outcome = await execute(attempt);
      // The final reply is in the log; the owner cancels before the worker settles.
      cancel = t.client.request(CancelRunDocument, { input: { runId: runIdOf(attempt.run.id) } });
      await cancel;
      return outcome;
    };
    const { run } = await admit(t.client, { workspaceId: workspace.id, question: "Summarise the market" });
    const done = await settled(t.client, run.id);
    expect(cancel).toBeDefined();

    expect(done).toMatchObject({ status: "CANCELLED", answer: null });
    const materials = (await t.client.request(RunMaterialsDocument, { id: run.id })).run!;
    expect(materials.acceptedPublicationVersions.edges.map((edge) => edge.node)).toEqual([]);
    expect(materials.checkpointProposals.edges.map((edge) => edge.node).map((p) => p.status)).toEqual(["DROPPED"]);
    const checkpoint = expectType((await t.client.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id })).node!, "Workspace");
    expect(checkpoint.checkpoint).toBeNull();
    // Nothing was linked for it: the workspace holds its conversation and run, no publication.
    const links = (await t.client.request(WorkspaceLinksDocument, { workspaceId: workspace.id, first: 50 })).workspace!.links.edges;
    expect(links.map((e) => e.node.kind).filter((kind) => kind === "PUBLICATION")).toEqual([]);
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(done.trace!.spans.find((s) => s.kind === "RUN")!.status).toBe("CANCELLED");
  });

  it("stores NUL bytes and unpaired surrogates from tools and the model exactly, shows them safely, and succeeds", async () => {
    const hostile = "before\u0000middle\uD800after\uDC00end";
    const echo: Tool = {
      schema: { name: "hostile_page", description: "returns hostile bytes", parameters: { type: "object" } },
      execute: async (args) => `page ${hostile} args=${JSON.stringify(args)}`,
    };
    // A real page with a NUL in it, fetched by the real http_fetch tool.
    const site = createServer((_req, res) => res.end(`fetched ${hostile}`));
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    const host = `127.0.0.1:${(site.address() as AddressInfo).port}`;
    const fetchTool = createHttpFetchTool({ allowedHosts: [host], maxBytes: 10_000, timeoutMs: 5_000 });
    const model = byQuestion({
      "Read the hostile page": (since) =>
        since.length === 0
          ? {
              toolCalls: [
                { name: "hostile_page", arguments: { note: hostile } },
                { name: "http_fetch", arguments: { url: `http://${host}/` } },
              ],
            }
          : { content: `Answer: ${hostile}` },
    });
    const t = await start(model, [echo, fetchTool]);
    cleanup = () => new Promise<void>((resolve) => site.close(() => resolve()));
    const workspace = await createWorkspace(t.client);
    const { run } = await admit(t.client, { workspaceId: workspace.id, question: "Read the hostile page" });
    const done = await settled(t.client, run.id);

    expect(done).toMatchObject({ status: "SUCCEEDED", answer: `Answer: ${hostile}` });
    // Results are logged as they arrive, so either may come first.
    const results = done.messages.edges.filter((e) => e.node.role === "TOOL").map((e) => e.node.content);
    const pageResult = results.find((content) => content.startsWith("page "));
    const fetchResult = results.find((content) => !content.startsWith("page "));
    expect(pageResult).toBe(`page ${hostile} args=${JSON.stringify({ note: hostile })}`);
    // UTF-8 has no unpaired surrogates (the decoder makes them U+FFFD); the NUL arrives as sent.
    expect(fetchResult).toContain("fetched before\u0000middle\uFFFDafter\uFFFDend");
    expect(done.trace!.spans.filter((s) => s.status !== "OK")).toEqual([]);
    // The model is shown printable stand-ins, never the raw bytes a strict server would refuse.
    const shown = JSON.stringify(model.requests.at(-1)!.messages);
    const texts: string[] = [];
    const collect = (value: unknown): void => {
      if (typeof value === "string") texts.push(value);
      else if (value && typeof value === "object") Object.values(value).forEach(collect);
    };
    collect(model.requests.at(-1)!.messages);
    expect(texts.filter((text) => text.includes("\u0000") || !isWellFormed(text))).toEqual([]);
    expect(shown).toContain("before␀middle\uFFFDafter\uFFFDend");
    // The published answer is a document for people: stand-ins too.
    const published = (await t.client.request(RunMaterialsDocument, { id: run.id })).run!.acceptedPublicationVersions.edges.map((edge) => edge.node);
    expect(published.map((v) => v.content)).toEqual(["Answer: before␀middle\uFFFDafter\uFFFDend"]);
  });
});

/** No unpaired surrogate (what String.prototype.isWellFormed tells on newer engines). */
const isWellFormed = (text: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

const runIdOf = (id: string) => Buffer.from(`Run:${id}`, "utf8").toString("base64");
