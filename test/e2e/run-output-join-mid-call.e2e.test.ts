// A subscriber who joins mid-call gets the call's text so far before anything else of it: while
// its snapshot is missing (dropped on its way, as a full publish backlog drops it, with nothing to
// tell the subscriber) it keeps asking; and a snapshot larger than the response's byte budget
// (MAX_RESPONSE_BYTES) comes as several updates within it, not as RESPONSE_TOO_LARGE again at
// every reconnect. A real HTTP server streams the chat-completions protocol, paused mid-answer.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunOutputDocument, type RunOutputSubscription } from "../../sdk/generated/graphql.js";
import type { RunOutputFrame } from "../../src/events/topics.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { comparePositions, createClient } from "../../sdk/client.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

type Update = RunOutputSubscription["runOutput"];

const MAX_RESPONSE_BYTES = 65_536;
const SHORT = Array.from({ length: 12 }, (_, i) => `piece ${i} of the answer; `);
// 20 pieces of about 10,000 bytes each (5,000 UTF-16 units: 1-, 2-, 3- and 4-byte characters), paused before the last.
const LARGE = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, "0")}:${"aé€😀".repeat(1_000).slice(3)}`);
const SNAPSHOTS_DROPPED = 4;

const unwrap = (stream: AsyncIterableIterator<{ runOutput: Update }>): AsyncIterator<Update> => ({
  next: async () => {
    const step = await stream.next();
    return step.done ? { done: true, value: undefined } : { done: false, value: step.value.runOutput };
  },
});

/** Reads a stream until `until` says stop or it ends, failing after `ms` without an update. */
async function collect(stream: AsyncIterator<Update>, until: (updates: Update[]) => boolean = () => false, ms = 20_000) {
  const updates: Update[] = [];
  for (;;) {
    const next = await withTimeout(stream.next(), ms);
    if (next.done) return updates;
    updates.push(next.value);
    if (until(updates)) return updates;
  }
}

const textOf = (updates: readonly Update[]) =>
  updates
    .filter((u) => u.kind === "TEXT_DELTA")
    .map((u) => u.text)
    .join("");

describe("a subscriber joining a model call mid-answer", () => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  let resume: () => void = () => undefined;
  const pause = () => new Promise<void>((resolve) => (resume = resolve));
  let paused = pause();

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body) => {
      const question = body.messages.findLast((m) => m.role === "user")?.content ?? "";
      const text = question.startsWith("large") ? LARGE : SHORT;
      return { text, gapMs: 5, pause: { index: text.length - (question.startsWith("large") ? 1 : 6), until: paused } };
    });
    t = await startTestApp("pglite", {
      listen: true,
      limits: { ...DEFAULT_QUERY_LIMITS, maxResponseBytes: MAX_RESPONSE_BYTES },
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-join-")),
      },
    });
  });
  afterAll(async () => {
    resume();
    await t?.close();
    await stub?.close();
  });

  /** Admits a run and waits until a subscriber from its start has `shown` of its answer: the call is paused there. */
  const midAnswer = async (question: string, shown: string) => {
    paused = pause();
    const { run } = await admit(t.client, { question });
    const early = unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id }));
    await collect(early, (updates) => textOf(updates) === shown);
    return { run, early };
  };

  it("gets the text so far before the call's MESSAGE_DONE though its first snapshots were dropped on their way", async () => {
    const { run } = await midAnswer("short, then pause", SHORT.slice(0, 6).join(""));
    // The executing instance's snapshots are lost on their way, as a full publish backlog loses them: nothing tells the asker.
    let snapshots = 0;
    const publish = t.app.events.publish.bind(t.app.events) as (...args: unknown[]) => void;
    (t.app.events as { publish: unknown }).publish = (...args: unknown[]) => {
      const frame = args[2] as RunOutputFrame | undefined;
      if (args[0] === "run:output" && frame?.kind === "SNAPSHOT" && ++snapshots <= SNAPSHOTS_DROPPED) return;
      publish(...args);
    };
    try {
      const joiner = unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id }));
      // The call goes on once the joiner has its first update (or, were it never to come, after 8 s).
      const first = withTimeout(joiner.next(), 20_000);
      const fallback = setTimeout(resume, 8_000);
      const head = await first;
      clearTimeout(fallback);
      resume();
      const updates = [head.value as Update, ...(await collect(joiner))];
      expect(updates[0]).toMatchObject({ kind: "TEXT_DELTA", text: SHORT.slice(0, 6).join("") });
      expect(textOf(updates)).toBe(SHORT.join(""));
      expect(updates.map((u) => u.kind).filter((kind) => kind !== "TEXT_DELTA")).toEqual(["MESSAGE_DONE", "RUN_DONE"]);
      expect(snapshots).toBeGreaterThan(SNAPSHOTS_DROPPED);
    } finally {
      (t.app.events as { publish: unknown }).publish = publish;
    }
  }, 40_000);

  it(`gets a 190 KB call's text so far whole with MAX_RESPONSE_BYTES ${MAX_RESPONSE_BYTES}, as several updates within it, then the rest`, async () => {
    const { run } = await midAnswer("large, then pause", LARGE.slice(0, 19).join(""));
    const bytesSoFar = Buffer.byteLength(LARGE.slice(0, 19).join(""));
    expect(bytesSoFar).toBeGreaterThan(2 * MAX_RESPONSE_BYTES);
    // A bare subscription, and the SDK's text iterator (which reconnects on an error, five times at most).
    const bare = unwrap(t.connect().subscribe(RunOutputDocument, { runId: run.id }));
    const texts: string[] = [];
    const sdk = createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl });
    const viaSdk = (async () => {
      for await (const text of sdk.runOutput(run.id)) texts.push(text);
    })().finally(() => sdk.close());
    const before = await collect(bare, (updates) => textOf(updates).length === LARGE.slice(0, 19).join("").length);
    expect(textOf(before)).toBe(LARGE.slice(0, 19).join(""));
    resume();
    const updates = [...before, ...(await collect(bare))];
    await withTimeout(viaSdk, 20_000);
    const answer = LARGE.join("");
    expect(textOf(updates)).toBe(answer);
    expect(texts.join("")).toBe(answer);
    // The text so far came as several updates, none past the budget, each with its own position.
    const deltas = updates.filter((u) => u.kind === "TEXT_DELTA");
    expect(deltas.length).toBeGreaterThanOrEqual(Math.ceil(bytesSoFar / MAX_RESPONSE_BYTES));
    for (const delta of deltas) expect(Buffer.byteLength(delta.text!)).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
    for (let i = 1; i < updates.length; i += 1) expect(comparePositions(updates[i]!.seq, updates[i - 1]!.seq)).toBeGreaterThan(0);
    expect(updates.at(-1)?.kind).toBe("RUN_DONE");
  }, 40_000);
});
