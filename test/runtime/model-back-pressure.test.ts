// Model back-pressure (issue 36) against a real HTTP server speaking the OpenAI protocol: a model
// endpoint answering 429 (or 5xx) is tried again after its Retry-After, a bounded number of times;
// past the bound the run's attempt is handed back and resumed later, never failed; and at most
// MODEL_MAX_CONCURRENCY requests per endpoint are in flight.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ModelError, OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type ModelRequest, ModelRetryLater } from "../../src/runtime/ports/model.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, type StubTurn, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

const rateLimited: StubTurn = { refuse: 429, headers: { "retry-after": "1" } };
const answer: StubTurn = { text: ["All ", "done."] };
const request: ModelRequest = { messages: [{ role: "user", content: "Say hello" }], tools: [] };

/** A stub refusing the first `refusals` requests as `refusal` says, then answering; records when each request came. */
async function refusingStub(refusals: number, refusal: StubTurn = rateLimited) {
  const arrivals: number[] = [];
  stub = closing(
    await startOpenAIStreamStub(() => {
      arrivals.push(performance.now());
      return arrivals.length <= refusals ? refusal : answer;
    }),
  );
  return { baseURL: stub.baseURL, arrivals };
}

const model = (baseURL: string, extra: Partial<ConstructorParameters<typeof OpenAIModel>[0]> = {}) =>
  new OpenAIModel({ baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, ...extra });

describe("the openai adapter under back-pressure", () => {
  it("answers after three 429s with Retry-After: 1, waiting a second before each retry", async () => {
    const { baseURL, arrivals } = await refusingStub(3);
    const response = await model(baseURL).complete(request);
    expect(response.content).toBe("All done.");
    expect(arrivals).toHaveLength(4);
    for (let i = 1; i < 4; i += 1) expect(arrivals[i]! - arrivals[i - 1]!).toBeGreaterThanOrEqual(950);
  });

  it("past its retries, a busy endpoint's refusal says when to come back (ModelRetryLater), not a failure", async () => {
    const { baseURL, arrivals } = await refusingStub(5, { refuse: 503, headers: { "retry-after": "2" } });
    const error = await model(baseURL, { maxRetries: 1 })
      .complete(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelRetryLater);
    expect(error).toMatchObject({ retryAfterMs: 2_000 });
    expect((error as ModelRetryLater).cause).toBeInstanceOf(ModelError);
    expect(arrivals).toHaveLength(2);
  });

  it("does not hold a request for longer than its bound: a Retry-After past it hands back at once", async () => {
    const { baseURL, arrivals } = await refusingStub(5, { refuse: 429, headers: { "retry-after": "3600" } });
    const error = await model(baseURL)
      .complete(request)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "ModelRetryLater", retryAfterMs: 3_600_000 });
    expect(arrivals).toHaveLength(1);
  });

  it("a refusal that is not the endpoint being busy (401) is not retried", async () => {
    const { baseURL, arrivals } = await refusingStub(5, { refuse: 401 });
    const error = await model(baseURL)
      .complete(request)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ status: 401 });
    expect(arrivals).toHaveLength(1);
  });

  it("keeps at most MODEL_MAX_CONCURRENCY requests in flight to one endpoint; the others wait their turn", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let received = 0;
    stub = closing(
      await startOpenAIStreamStub(() => {
        received += 1;
        return { text: ["a", "b"], pause: { index: 1, until: held } };
      }),
    );
    // Two models of one endpoint share its cap.
    const [first, second] = [model(stub.baseURL, { maxConcurrency: 2 }), model(stub.baseURL, { maxConcurrency: 2 })];
    const replies = [first, second, first, second, first].map((m) => m.complete(request));
    await waitFor(() => received === 2, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received).toBe(2);
    release();
    expect((await Promise.all(replies)).map((r) => r.content)).toEqual(["ab", "ab", "ab", "ab", "ab"]);
    expect(received).toBe(5);
  });
});

describe("a run whose model endpoint is rate limited", () => {
  async function start(modelOptions: Partial<ConstructorParameters<typeof OpenAIModel>[0]>, refusals: number) {
    const { baseURL, arrivals } = await refusingStub(refusals);
    t = closing(
      await startTestApp("pglite", {
        runtime: { model: model(baseURL, modelOptions), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-busy-")), sweepMs: 300 },
      }),
    );
    return arrivals;
  }

  it("succeeds after three 429s with Retry-After: 1, in its first attempt, never FAILED", async () => {
    await start({}, 3);
    const { run } = await admit(t!.client, { question: "Are you there?" });
    const done = await settled(t!.client, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "All done.", failureReason: null });
    expect(done.attempts.map((a) => a.outcome)).toEqual(["COMPLETED"]);
  });

  it("past the retry bound the attempt is handed back, and the run resumes once the endpoint's wait is over", async () => {
    const arrivals = await start({ maxRetries: 1 }, 3);
    const { run } = await admit(t!.client, { question: "Are you there?" });
    const done = await settled(t!.client, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "All done.", failureReason: null });
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    const [first, second] = done.attempts;
    // The second attempt waited the Retry-After the endpoint sent before it asked again.
    expect(Date.parse(second!.startedAt) - Date.parse(first!.endedAt!)).toBeGreaterThanOrEqual(900);
    expect(arrivals).toHaveLength(4);
  });
});
