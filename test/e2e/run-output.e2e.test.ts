// runOutput end to end: a run answered by the openai adapter against a real HTTP server streaming
// the chat-completions protocol; subscribers over graphql-ws and SSE see the model's output as it
// is produced, and what they receive adds up exactly to what the log stored.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RunOutputDocument, type RunOutputSubscription } from "../../sdk/generated/graphql.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { startHttpServer } from "../../src/server/http-server.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { runOutputUpdates } from "../../src/trace/output/run-output-updates.js";
import { comparePositions, createClient } from "../../sdk/client.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

type Update = RunOutputSubscription["runOutput"];

const ANSWER = Array.from({ length: 12 }, (_, i) => `piece ${i} of the answer; `);
const CALLS = [
  { id: "call_a", name: "task_list", fragments: ['{"action":', '"add","title":', '"Verify"}'] },
  { id: "call_b", name: "task_list", fragments: ['{"action":"add",', '"title":"Cite"}'] },
];
const QUERY = "subscription ($runId: ID!, $afterSeq: String) { runOutput(runId: $runId, afterSeq: $afterSeq) { seq modelCallSpanId kind text toolCallId } }";

/** What a subscriber received, in the shape tests compare: the texts of each call and of each tool call. */
function assemble(updates: readonly Update[]) {
  const texts = new Map<string, string>();
  const args = new Map<string, string>();
  for (const u of updates) {
    if (u.kind === "TEXT_DELTA") texts.set(u.modelCallSpanId!, (texts.get(u.modelCallSpanId!) ?? "") + u.text);
    if (u.kind === "TOOL_CALL_DELTA") args.set(u.toolCallId!, (args.get(u.toolCallId!) ?? "") + u.text);
  }
  return { texts, args, done: updates.filter((u) => u.kind === "MESSAGE_DONE").map((u) => u.modelCallSpanId) };
}

async function* sse(url: string, runId: string, afterSeq?: string): AsyncGenerator<Update> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ query: QUERY, variables: { runId, afterSeq } }),
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffered += value;
    const events = buffered.split("\n\n");
    buffered = events.pop()!;
    for (const event of events) {
      const data = /^data: (.+)$/m.exec(event)?.[1];
      const message = data ? (JSON.parse(data) as { data?: { runOutput: Update }; errors?: unknown[] }) : undefined;
      if (message?.errors) throw new Error(JSON.stringify(message.errors));
      if (message?.data) yield message.data.runOutput;
    }
  }
}

/** Reads a stream to its end (or until `until` says stop), failing after 20 s without an update. */
async function collect(stream: AsyncIterator<Update>, until: (updates: Update[]) => boolean = () => false) {
  const updates: Update[] = [];
  for (;;) {
    const next = await withTimeout(stream.next(), 20_000);
    if (next.done) return { updates, completed: true };
    updates.push(next.value);
    if (until(updates)) return { updates, completed: false };
  }
}

const unwrap = <T>(stream: AsyncIterableIterator<{ runOutput: T }>): AsyncIterator<T> => ({
  next: async () => {
    const step = await stream.next();
    return step.done ? { done: true, value: undefined } : { done: false, value: step.value.runOutput };
  },
});

describe("runOutput of a run answered through a streaming model server", () => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  /** Pauses the answer of a question ending in "pause" after half its pieces, until the test lets it go. */
  let resume: () => void = () => undefined;
  let paused = new Promise<void>((resolve) => (resume = resolve));
  const pauseAgain = () => (paused = new Promise<void>((resolve) => (resume = resolve)));

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body) => {
      if (!body.messages.some((m) => m.role === "tool")) return { toolCalls: CALLS };
      const question = body.messages.findLast((m) => m.role === "user")?.content ?? "";
      return { text: ANSWER, gapMs: 15, ...(question.endsWith("pause") && { pause: { index: 6, until: paused } }) };
    });
    t = await startTestApp("pglite", {
      listen: true,
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-output-")),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stub?.close();
  });

  const modelCalls = async (runId: string) => {
    const view = (await t.client.runTrace(runId))!;
    return { view, calls: view.trace!.spans.filter((span) => span.kind === "MODEL_CALL").map((span) => span.id) };
  };

  it("streams to graphql-ws and SSE subscribers deltas that add up exactly to the stored answer and tool calls, then completes", async () => {
    await t.app.runtime!.worker.stop(); // both subscribers listen before the run starts
    const { run } = await admit(t.client, { question: "Plan and answer" });
    const ws = collect(unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id })));
    const overSse = collect(sse(t.server!.url, run.id));
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.app.runtime!.worker.start();
    const received = await Promise.all([ws, overSse]);

    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    const { view, calls } = await modelCalls(run.id);
    expect(view.answer).toBe(ANSWER.join(""));
    for (const { updates, completed } of received) {
      expect(completed).toBe(true);
      expect(updates.at(-1)?.kind).toBe("RUN_DONE");
      const { texts, args, done } = assemble(updates);
      expect(texts).toEqual(new Map([[calls[1], view.answer]]));
      expect(args).toEqual(new Map(CALLS.map((call) => [call.id, call.fragments.join("")])));
      expect(done).toEqual(calls);
      // Coalesced: fewer frames than the model's pieces is allowed, more is not.
      expect(updates.filter((u) => u.kind === "TEXT_DELTA").length).toBeLessThanOrEqual(ANSWER.length);
    }
  });

  it("gives a subscriber who joins mid-answer the text so far in one TEXT_DELTA, then the live deltas", async () => {
    const { run } = await admit(t.client, { question: "please pause" });
    const early = unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id }));
    const half = ANSWER.slice(0, 6).join("");
    const before = await collect(early, (updates) => [...assemble(updates).texts.values()][0] === half);
    expect(before.completed).toBe(false);

    const joiner = unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id }));
    const joined = await collect(joiner, (updates) => updates.some((u) => u.kind === "TEXT_DELTA"));
    const first = joined.updates.find((u) => u.kind === "TEXT_DELTA")!;
    expect(first.text).toBe(half);
    // The tool-calling step had finished before the joiner came: its message is the log's.
    expect(joined.updates.filter((u) => u.kind === "TOOL_CALL_DELTA")).toEqual([]);

    // Resuming after the joiner's last update, over SSE, brings exactly the rest: nothing of it again.
    const resumed = sse(t.server!.url, run.id, first.seq);

    resume();
    const [rest, restResumed, restEarly] = await Promise.all([collect(joiner), collect(resumed), collect(early)]);
    const { view, calls } = await modelCalls(run.id);
    expect(view.answer).toBe(ANSWER.join(""));
    for (const [updates, completed] of [
      [[...joined.updates, ...rest.updates], rest.completed],
      [[first, ...restResumed.updates], restResumed.completed],
      [[...before.updates, ...restEarly.updates], restEarly.completed],
    ] as const) {
      expect(completed).toBe(true);
      expect(assemble(updates).texts.get(calls[1]!)).toBe(view.answer);
      // Every update has its own position, greater than the one before.
      for (let i = 1; i < updates.length; i += 1)
        expect(comparePositions(updates[i]!.seq, updates[i - 1]!.seq), JSON.stringify(updates.map((u) => [u.seq, u.kind]))).toBeGreaterThan(0);
      expect(updates.at(-1)?.kind).toBe("RUN_DONE");
    }
  });

  it("on a finished run: each model call's MESSAGE_DONE from the trace, then RUN_DONE, without deltas", async () => {
    const { run } = await admit(t.client, { question: "Plan and answer" });
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    const { calls } = await modelCalls(run.id);
    const { updates, completed } = await collect(unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id })));
    expect(completed).toBe(true);
    expect(updates.map((u) => [u.kind, u.modelCallSpanId])).toEqual([...calls.map((id) => ["MESSAGE_DONE", id]), ["RUN_DONE", null]]);
    // The trace's replay is read as the subscriber goes: however long it is, it never counts against the buffer.
    const small = runOutputUpdates({
      prisma: t.app.db.prisma,
      events: t.app.events,
      runId: idOfType(run.id, "Run")!,
      afterSeq: { seq: 0, chars: 0 },
      bufferLimit: 2,
    });
    const kinds: string[] = [];
    for await (const update of small) kinds.push(update.kind);
    expect(kinds).toEqual(["MESSAGE_DONE", "MESSAGE_DONE", "RUN_DONE"]);
    // Resuming after the first call's end brings only what came after it.
    const after = await collect(unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id, afterSeq: updates[0]!.seq })));
    expect(after.updates.map((u) => u.kind)).toEqual(["MESSAGE_DONE", "RUN_DONE"]);
  });

  it("releases its listeners at once when the subscriber leaves while the run is idle, and after the run settles", async () => {
    await t.app.runtime!.worker.stop();
    const idle = t.listeners();
    const { run } = await admit(t.client, { question: "Plan and answer" });
    const leaving = t.connect().subscribe(RunOutputDocument, { runId: run.id });
    const first = leaving.next();
    await vi.waitFor(() => expect(t.listeners()).toBeGreaterThan(idle), { timeout: 5_000, interval: 20 });
    await leaving.return?.();
    await vi.waitFor(() => expect(t.listeners()).toBe(idle), { timeout: 5_000, interval: 20 });
    expect(await first).toMatchObject({ done: true });

    const staying = collect(unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id })));
    await vi.waitFor(() => expect(t.listeners()).toBeGreaterThan(idle), { timeout: 5_000, interval: 20 });
    t.app.runtime!.worker.start();
    expect((await staying).completed).toBe(true);
    // With the worker (which listens for runs and snapshot requests) stopped again, no listener is left.
    await t.app.runtime!.worker.stop();
    await vi.waitFor(() => expect(t.listeners()).toBe(idle), { timeout: 5_000, interval: 20 });
    t.app.runtime!.worker.start();
  });

  it.each([
    ["graphql-ws", {}],
    ["SSE", { subscriptions: "sse" }],
  ] as const)("a page reload mid-answer: resuming from the stored seq gives exactly the rest of the model's text (%s)", async (_transport, options) => {
    pauseAgain();
    const page = () => createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl, ...options });
    const first = page();
    const { run } = await admit(first, { question: "reload, then pause" });
    // The first page renders the answer and stores the seq of each update it rendered.
    let shown = "";
    let stored: string | undefined;
    const half = ANSWER.slice(0, 6).join("");
    for await (const update of first.watchRun(run.id)) {
      if (update.kind === "TEXT_DELTA") shown += update.text;
      stored = update.seq;
      if (shown.endsWith(half)) break;
    }
    await first.close();
    // The reloaded page resumes from the stored seq: with the SDK, and with a bare subscription.
    const reloaded = page();
    const bare = unwrap(reloaded.subscribe(RunOutputDocument, { runId: run.id, afterSeq: stored }));
    const sdkPage = page();
    const viaSdk = (async () => {
      let text = "";
      for await (const update of sdkPage.watchRun(run.id, { afterSeq: stored })) if (update.kind === "TEXT_DELTA") text += update.text;
      await sdkPage.close();
      return text;
    })();
    setTimeout(resume, 300);
    const { updates } = await collect(bare);
    await reloaded.close();
    const { view, calls } = await modelCalls(run.id);
    const answerCall = calls.at(-1)!;
    expect(view.answer).toBe(ANSWER.join(""));
    const rest = updates.filter((u) => u.kind === "TEXT_DELTA" && u.modelCallSpanId === answerCall).map((u) => u.text);
    expect(shown + rest.join("")).toBe(view.answer);
    expect(shown + (await viaSdk)).toBe(view.answer);
    for (const [i, u] of updates.entries()) expect(comparePositions(u.seq, i === 0 ? stored! : updates[i - 1]!.seq)).toBeGreaterThan(0);
  });

  it.each([
    ["graphql-ws", {}],
    ["SSE, sending documentIds", { subscriptions: "sse", trustedDocuments: true }],
  ] as const)("the SDK's runOutput gives the answer's text as it streams, once, across a server restart mid-answer (%s)", async (_transport, options) => {
    pauseAgain();
    let server = await startHttpServer({ app: t.app, port: 0, host: "127.0.0.1" });
    const { port } = server;
    const client = createClient({ url: server.url, wsUrl: server.wsUrl, ...options });
    try {
      const { run } = await admit(client, { question: "restart, then pause" });
      const pieces: string[] = [];
      const half = ANSWER.slice(0, 6).join("");
      for await (const piece of client.runOutput(run.id)) {
        pieces.push(piece);
        if (pieces.join("") === half) {
          await server.close(); // every socket drops; the model call goes on
          server = await startHttpServer({ app: t.app, port, host: "127.0.0.1" });
          setTimeout(resume, 500); // the rest of the answer comes once the client is back
        }
      }
      expect(pieces.join("")).toBe(ANSWER.join(""));
      expect(pieces.length).toBeGreaterThan(2);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("tells a subscriber that stopped reading to resync, without slowing the run", async () => {
    await t.app.runtime!.worker.stop();
    const { run } = await admit(t.client, { question: "Plan and answer" });
    const stream = runOutputUpdates({
      prisma: t.app.db.prisma,
      events: t.app.events,
      runId: idOfType(run.id, "Run")!,
      afterSeq: { seq: 0, chars: 0 },
      bufferLimit: 2,
    });
    const first = stream.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.app.runtime!.worker.start();
    expect((await withTimeout(first, 20_000)).value).toMatchObject({ kind: "TOOL_CALL_DELTA" });
    // The subscriber stops reading; the run carries on to the end regardless.
    expect((await settled(t.client, run.id)).answer).toBe(ANSWER.join(""));
    const rest: string[] = [];
    for await (const update of stream) rest.push(update.kind);
    expect(rest.at(-1)).toBe("RESYNC_REQUIRED");
    expect(rest).not.toContain("RUN_DONE");
  });

  it("is NotFound for another principal's run", async () => {
    const { run } = await admit(t.client, { question: "Plan and answer" });
    const stranger = t.connect(await t.createPrincipal("stranger"));
    await expect(withTimeout(stranger.subscribe(RunOutputDocument, { runId: run.id }).next(), 10_000)).rejects.toThrow("Run not found.");
    const response = await fetch(t.server!.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${await t.createPrincipal("other")}` },
      body: JSON.stringify({ query: QUERY, variables: { runId: run.id } }),
    });
    expect(await response.text()).toContain("Run not found.");
    // A position past any trace's says nothing either, before the run is known to be the caller's.
    for (const runId of [run.id, Buffer.from("Run:no-such-run").toString("base64")]) {
      await expect(withTimeout(stranger.subscribe(RunOutputDocument, { runId, afterSeq: "99999999999" }).next(), 10_000)).rejects.toThrow("Run not found.");
    }
    await settled(t.client, run.id);
  });
});
