// A model reply cut off mid-stream, against a real HTTP server speaking the OpenAI protocol: the
// connection closed mid-body, the body ended without a finish, an error event in the body. Such a
// reply is a transient failure: nothing of it stands (no answer, no tool call run or held for
// approval), its model call ends as an error naming the cut, and the request is made again as a
// new model call; past the retry bound the attempt is handed back, never failed.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ModelError, OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type ModelRequest, ModelReplyInterrupted, ModelRetryLater } from "../../src/runtime/ports/model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type StubCut, type StubTurn, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { closedAfterEach } from "../support/per-test.js";
import { type RunView, settled } from "../support/scripted-runs.js";
import { startTestApp } from "../support/test-app.js";
import { countedDeployTool } from "../support/deploy-tool.js";

const closing = closedAfterEach();
const ANSWER = ["The ", "whole ", "answer, ", "as written."];
const request: ModelRequest = { messages: [{ role: "user", content: "Say hello" }], tools: [] };

/** A stub answering each request, in order, as `turns` says (the last one from then on); counts the requests. */
async function stubOf(...turns: StubTurn[]) {
  const arrivals = { count: 0 };
  const stub = closing(await startOpenAIStreamStub(() => turns[Math.min(arrivals.count++, turns.length - 1)]!));
  return { baseURL: stub.baseURL, arrivals };
}

const model = (baseURL: string, extra: Partial<ConstructorParameters<typeof OpenAIModel>[0]> = {}) =>
  new OpenAIModel({ baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, baseDelayMs: 20, ...extra });

const cutText = (cut: StubCut): StubTurn => ({ text: ["The ", "partial ", "reply"], cut });

describe("the openai adapter, given a reply cut off mid-stream", () => {
  it.each([
    ["the connection closed mid-body", "socket" as const, /connection was lost mid-stream/],
    ["the body ended without a finish", "end" as const, /ended before the model reported a finish reason/],
    ["an overloaded error event", { error: { message: "Overloaded", type: "server_error", code: "overloaded" } }, /error mid-stream: Overloaded/],
    ["a rate-limit error event (numeric code)", { error: { message: "Slow down", type: "requests", code: 429 } }, /error mid-stream: Slow down/],
  ])("%s: says the reply was interrupted and asks for a new call, without trying again itself", async (_, cut, reason) => {
    const { baseURL, arrivals } = await stubOf(cutText(cut), { text: ANSWER });
    const error = await model(baseURL)
      .complete(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelReplyInterrupted);
    expect((error as Error).message).toMatch(/the reply was cut off/);
    expect((error as Error).message).toMatch(reason);
    expect(arrivals.count).toBe(1);
  });

  it("a reply that goes silent with its connection open: cut off after MODEL_IDLE_TIMEOUT_MS, the request made again as a new call", async () => {
    const { baseURL, arrivals } = await stubOf(cutText("silent"), { text: ANSWER });
    const silent = model(baseURL, { idleTimeoutMs: 300 });
    const started = performance.now();
    const error = await silent.complete(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelReplyInterrupted);
    expect((error as Error).message).toMatch(/the model server sent nothing for 0.3 s/);
    expect(performance.now() - started).toBeLessThan(30_000);
    // The same client's next request (a new call) is answered whole, on a fresh connection.
    const answered = await silent.complete(request);
    expect(answered.content).toBe(ANSWER.join(""));
    expect(arrivals.count).toBe(2);
  });

  it("an error event that is not transient (an invalid request, a content policy) stays the model's error", async () => {
    for (const error of [
      { message: "Bad schema", type: "invalid_request_error", code: "invalid_value" },
      { message: "Flagged", type: "invalid_request_error", code: "content_policy_violation" },
    ]) {
      const { baseURL } = await stubOf(cutText({ error }));
      const failure = await model(baseURL)
        .complete(request)
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(ModelError);
      expect(failure).toMatchObject({ retryable: false, interrupted: false });
    }
  });

  it("a request cut off as often as its bound allows is handed back (ModelRetryLater), counting the calls made before", async () => {
    const { baseURL } = await stubOf(cutText("socket"));
    const error = await model(baseURL, { maxRetries: 2 })
      .complete({ ...request, retries: 2 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelRetryLater);
    expect((error as Error).message).toMatch(/the reply was cut off/);
  });
});

/** The run's model calls' statuses, in order, and the ERROR events recorded on them. */
function modelCalls(run: RunView) {
  const calls = run.trace!.spans.filter((span) => span.kind === "MODEL_CALL").sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
  return { statuses: calls.map((call) => call.status), errors: calls.flatMap((call) => call.events.filter((e) => e.kind === "ERROR").map((e) => e.preview)) };
}

const assistantMessages = (run: RunView) => run.messages.edges.map((edge) => edge.node).filter((message) => message.role === "ASSISTANT");

describe.each(backends)("a run whose model reply is cut off mid-stream, on %s", (backend) => {
  const counted = countedDeployTool();
  const deploy = counted.tool;

  async function start(modelOptions: Partial<ConstructorParameters<typeof OpenAIModel>[0]>, ...turns: StubTurn[]) {
    const { baseURL, arrivals } = await stubOf(...turns);
    counted.reset();
    const t = closing(
      await startTestApp(backend, {
        runtime: {
          model: model(baseURL, modelOptions),
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-cut-")),
          sweepMs: 300,
          extraTools: [deploy],
          approvals: { rules: { deploy: "always" } },
        },
      }),
    );
    const { run } = await admit(t.client, { question: "Are you there?" });
    return { done: await settled(t.client, run.id, 30_000), arrivals };
  }

  it("cut after three pieces and answered in full on the retry: SUCCEEDED, only the full answer logged, one error call and one ok call", async () => {
    const { done, arrivals } = await start({}, cutText("socket"), { text: ANSWER });
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: ANSWER.join(""), failureReason: null });
    expect(assistantMessages(done).map((message) => message.content)).toEqual([ANSWER.join("")]);
    const calls = modelCalls(done);
    expect(calls.statuses).toEqual(["ERROR", "OK"]);
    expect(calls.errors).toHaveLength(1);
    expect(calls.errors[0]).toMatch(/the reply was cut off: the connection was lost mid-stream/);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["COMPLETED"]);
    expect(arrivals.count).toBe(2);
  });

  it("the usage a cut reply reported is counted and charged with its call", async () => {
    const { done } = await start({}, { ...cutText("end"), usageEach: true }, { text: ANSWER });
    expect(done.status).toBe("SUCCEEDED");
    const calls = done.trace!.spans.filter((span) => span.kind === "MODEL_CALL");
    // The stub reports 50 tokens in and 10 out for each reply, the cut one included.
    expect(calls.map((call) => [call.status, call.usage?.input, call.usage?.output]).sort()).toEqual([
      ["ERROR", 50, 10],
      ["OK", 50, 10],
    ]);
    expect(done.tokensUsed).toBe(120);
  });

  it("a cut reply whose server reported no usage is charged its bound: its counted input and what streamed of it", async () => {
    const { done } = await start({}, cutText("end"), { text: ANSWER });
    expect(done.status).toBe("SUCCEEDED");
    const [cut] = done.trace!.spans.filter((span) => span.kind === "MODEL_CALL").sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
    expect(cut!.status).toBe("ERROR");
    expect(JSON.parse(cut!.attributes as string)).toMatchObject({ interrupted: true, usageEstimated: true });
    expect(cut!.usage!.input).toBeGreaterThan(0);
    expect(cut!.usage!.output).toBeGreaterThan(0);
    // The cut call's charge counts in the run's tokens with the answered call's reported 50 + 10.
    expect(done.tokensUsed).toBe(cut!.usage!.input + cut!.usage!.output + 60);
  });

  it("a cut reply that had streamed a tool call needing approval asks no one and runs nothing", async () => {
    const held: StubTurn = { toolCalls: [{ id: "call_deploy", name: "deploy", fragments: ['{"target":', '"production"}'] }], cut: "end" };
    const { done } = await start({}, held, { text: ANSWER });
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: ANSWER.join("") });
    expect(counted.calls()).toBe(0);
    expect(done.trace!.spans.filter((span) => span.kind === "TOOL_CALL")).toEqual([]);
    expect(done.trace!.spans.flatMap((span) => span.events).filter((event) => event.kind.startsWith("APPROVAL"))).toEqual([]);
    expect(assistantMessages(done).map((message) => [message.content])).toEqual([[ANSWER.join("")]]);
    expect(modelCalls(done).statuses).toEqual(["ERROR", "OK"]);
  });

  it("cut every time its attempt asks: the attempt is handed back, never FAILED, and a later attempt answers", async () => {
    const { done, arrivals } = await start({ maxRetries: 1 }, cutText("end"), cutText("end"), { text: ANSWER });
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: ANSWER.join(""), failureReason: null });
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    expect(modelCalls(done).statuses).toEqual(["ERROR", "ERROR", "OK"]);
    expect(assistantMessages(done).map((message) => message.content)).toEqual([ANSWER.join("")]);
    expect(arrivals.count).toBe(3);
  });
});
