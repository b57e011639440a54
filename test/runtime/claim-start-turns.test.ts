// The runs of one claim start together, and their opening reads come back together (one statement
// per kind for the whole claim: domain/batched-reads.ts). From there each run goes to its first
// model request — its tools, its context, the request's body — in a turn of the event loop of its
// own, so that what arrives meanwhile (the pieces of runs already streaming, which their
// subscribers wait for) is read between one run's start and the next: a claim of 64 runs given
// back its reads in one turn held the worker's thread for a few hundred milliseconds in a row.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Runs admitted while the worker is stopped, then claimed in its rounds (claim-passes.ts: 1, 4, then the other 7). */
const RUNS = 12;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

// PostgreSQL, where a worker process runs (goal: 100 runs on one); the embedded database answers a
// run's other opening reads in turns of its own (db/pglite-turns.ts), several runs' in one.
describe.each(backends.filter((backend) => backend === "postgres"))("the runs of a claim on %s", (backend) => {
  it(`make their first model requests in turns of the event loop of their own (${RUNS} runs)`, async () => {
    stub = closing(await startOpenAIStreamStub(() => ({ text: ["Done."] })));
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    // The turn of the event loop each model request is made in: a counter one immediate callback
    // raises once a turn (it queues itself for the next), while the runs start.
    let turn = 0;
    let ticking: NodeJS.Immediate | undefined;
    const tick = () => {
      turn += 1;
      ticking = setImmediate(tick);
    };
    const requestsInTurn = new Map<number, number>();
    const complete = model.complete.bind(model);
    model.complete = (request, onEvent) => {
      requestsInTurn.set(turn, (requestsInTurn.get(turn) ?? 0) + 1);
      if ([...requestsInTurn.values()].reduce((sum, count) => sum + count, 0) === RUNS) clearImmediate(ticking);
      return complete(request, onEvent);
    };
    t = closing(
      await startTestApp(backend, {
        runtime: { model, concurrency: RUNS, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-start-turns-")) },
      }),
    );
    const worker = t.app.runtime!.worker;
    await worker.stop();
    const runs = [];
    for (let i = 0; i < RUNS; i += 1) runs.push((await admit(t.client, { question: `question ${i}` })).run);
    tick();
    try {
      worker.start();
      for (const run of runs) expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    } finally {
      clearImmediate(ticking);
    }
    // Every run made its request, each in a turn no other run's request was made in.
    expect([...requestsInTurn.values()].reduce((sum, count) => sum + count, 0)).toBe(RUNS);
    expect(Math.max(...requestsInTurn.values())).toBe(1);
  });
});
