// runOutput gives a model call's first pieces as they come, without waiting for the call's start
// to reach the subscriber through the trace (a busy database or bus can hold it back for seconds),
// and a subscriber who resumes from such a piece's position gets exactly the rest of the answer.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { EventBus } from "../../src/events/topics.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { parseAfterSeq } from "../../src/graphql/sequence.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type RunOutputUpdate, runOutputUpdates } from "../../src/trace/output/run-output-updates.js";
import { comparePositions } from "../../sdk/client.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

const ANSWER = Array.from({ length: 8 }, (_, i) => `piece ${i} of the answer; `);
/** How long the subscriber's trace changes are held back. */
const TRACE_LAG_MS = 4_000;

/** The app's bus, with every trace change reaching the subscriber TRACE_LAG_MS late (live output is not held). */
function laggingTraces(events: EventBus): EventBus {
  const subscribe = ((topic: "trace:change", traceId: string) => {
    if (topic !== "trace:change") return (events.subscribe as unknown as (...args: unknown[]) => AsyncIterable<unknown>)(topic, traceId);
    const source = events.subscribe(topic, traceId)[Symbol.asyncIterator]();
    // Each change is read as it is published and handed on TRACE_LAG_MS after.
    const held: Promise<IteratorResult<unknown>>[] = [];
    let wake: () => void = () => undefined;
    void (async () => {
      for (;;) {
        const next = await source.next();
        held.push(new Promise((resolve) => setTimeout(() => resolve(next), TRACE_LAG_MS)));
        wake();
        if (next.done) return;
      }
    })();
    const late = (async function* () {
      for (;;) {
        if (held.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        const next = await held.shift()!;
        if (next.done) return;
        yield next.value;
      }
    })();
    return Object.assign(late, { return: async () => (await source.return?.(), { done: true, value: undefined }) });
  }) as EventBus["subscribe"];
  return { ...events, subscribe };
}

async function until(stream: AsyncGenerator<RunOutputUpdate>, enough: (updates: RunOutputUpdate[]) => boolean) {
  const updates: RunOutputUpdate[] = [];
  for (;;) {
    const next = await withTimeout(stream.next(), 20_000);
    if (next.done) return updates;
    updates.push(next.value);
    if (enough(updates)) return updates;
  }
}

const textOf = (updates: RunOutputUpdate[]) => updates.flatMap((u) => (u.kind === "TEXT_DELTA" ? [u.text] : [])).join("");

describe.each(backends)("runOutput's first pieces on %s", (backend) => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  let firstSentAt = 0;
  let release: () => void = () => undefined;
  let resume: () => void = () => undefined;

  beforeAll(async () => {
    const released = new Promise<void>((resolve) => (release = resolve));
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    stub = await startOpenAIStreamStub(() => ({
      text: ANSWER,
      gapMs: 5,
      // Nothing is streamed until the test saw the call's start written; the second half waits for a page reload.
      pause: [
        { index: 0, until: released },
        { index: 4, until: resumed },
      ],
      sent: (index, at) => {
        if (index === 0) firstSentAt = at;
      },
    }));
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-first-pieces-")),
      },
    });
  });
  afterAll(async () => {
    release();
    resume();
    await t?.close();
    await stub?.close();
  });

  it("reach a subscriber whose trace lags, at once; resuming from one gives exactly the rest", async () => {
    await t.app.runtime!.worker.stop();
    const { run } = await admit(t.client, { question: "Answer" });
    const runId = idOfType(run.id, "Run")!;
    const lagging = runOutputUpdates({
      prisma: t.app.db.prisma,
      events: laggingTraces(t.app.events),
      runId,
      afterSeq: { seq: 0, chars: 0 },
      bufferLimit: 1_000,
    });
    const first = lagging.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.app.runtime!.worker.start();
    // The model call's start is written (and announced, to everyone but this subscriber) before it streams.
    const prisma = t.app.db.prisma;
    await vi.waitFor(
      async () => {
        const calls = await prisma.span.findMany({ where: { traceId: runId, kind: "MODEL_CALL" }, select: { id: true } });
        const started = await prisma.traceChange.count({ where: { traceId: runId, type: "SPAN_STARTED", spanId: { in: calls.map((call) => call.id) } } });
        expect(started).toBe(1);
      },
      { timeout: 10_000, interval: 20 },
    );
    release();
    const delta = (await withTimeout(first, 20_000)).value as RunOutputUpdate;
    const delay = performance.now() - firstSentAt;
    expect(delta).toMatchObject({ kind: "TEXT_DELTA" });
    expect(delay).toBeLessThan(TRACE_LAG_MS / 2);

    // A page reload right after that piece: the rest, once, in order.
    const had = delta.text!;
    const resumed = runOutputUpdates({ prisma: t.app.db.prisma, events: t.app.events, runId, afterSeq: parseAfterSeq(delta.seq), bufferLimit: 1_000 });
    const restOf = until(resumed, (updates) => updates.at(-1)?.kind === "RUN_DONE");
    setTimeout(resume, 300);
    const rest = await restOf;
    expect(had + textOf(rest)).toBe(ANSWER.join(""));
    for (const [i, u] of rest.entries()) expect(comparePositions(u.seq, i === 0 ? delta.seq : rest[i - 1]!.seq)).toBeGreaterThan(0);

    // The lagging subscriber gets the whole answer too, then the call's end and the run's.
    const later = await until(lagging, (updates) => updates.at(-1)?.kind === "RUN_DONE");
    expect(had + textOf(later)).toBe(ANSWER.join(""));
    expect(later.map((u) => u.kind).filter((kind) => kind !== "TEXT_DELTA")).toEqual(["MESSAGE_DONE", "RUN_DONE"]);
    for (const [i, u] of later.entries()) expect(comparePositions(u.seq, i === 0 ? delta.seq : later[i - 1]!.seq)).toBeGreaterThan(0);
  });
});
