// What a worker sends when runs end: a freed slot looks for a run to claim only while the last
// claim found runs waiting (claim-passes.ts, worker.ts). When many runs end together with nothing
// queued, their freed slots cost one claim — the first, which finds nothing waiting — not one
// transaction (BEGIN, the claim statement, COMMIT) each. A run its principal's cap held back is
// still claimed the moment a run of that principal ends, with no sweep and no announcement. With a
// run queue, a claim that took nothing takes no delivery: the queue's fetch is sent only by claims
// that took runs, for as many deliveries as runs.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logger.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { PgBossRunQueue } from "../../src/runtime/adapters/pg-boss-queue.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { closedAfterEach } from "../support/per-test.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** The claim statement (claim-statement.ts). */
const CLAIM = /WITH RECURSIVE running AS/;
/** Runs answering at once, as many as the worker's slots. */
const RUNS = 6;
/** No sweep within a test: only announcements and freed slots wake the worker. */
const NO_SWEEP = { sweepMs: 3_600_000, schedulerPollMs: 3_600_000 };

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();
const sandboxDir = () => mkdtempSync(path.join(tmpdir(), "dossier-freed-slots-"));

/** Resolves once no statement came for `quietMs`. */
async function quiet(statements: string[], quietMs = 400): Promise<void> {
  for (let seen = -1; seen !== statements.length; ) {
    seen = statements.length;
    await new Promise((resolve) => setTimeout(resolve, quietMs));
  }
}

describe.each(backends)("freed slots on %s", (backend) => {
  it(`of ${RUNS} runs ending together with nothing queued cost one claim, not one each`, async () => {
    const statements: string[] = [];
    let asked = 0;
    /** Where the statement log was when every run had been asked and the answers went on. */
    let answered = -1;
    let release: () => void = () => undefined;
    const together = new Promise<void>((resolve) => (release = resolve));
    stub = closing(
      await startOpenAIStreamStub(() => {
        asked += 1;
        if (asked === RUNS) setTimeout(() => ((answered = statements.length), release()), 300);
        return { text: ["Done ", "now."], pause: { index: 1, until: together } };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = closing(
      await startTestApp(backend, {
        database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
        runtime: { model, concurrency: RUNS, ...NO_SWEEP, sandboxDir: sandboxDir() },
      }),
    );
    const runs = [];
    for (let i = 0; i < RUNS; i += 1) runs.push((await admit(t.client, { question: `Answer ${i}.` })).run);
    while (answered === -1) await new Promise((resolve) => setTimeout(resolve, 20));
    await quiet(statements);
    for (const run of runs) expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    // The first freed slot's claim found nothing waiting; the other five freed slots sent none.
    expect(statements.slice(answered).filter((sql) => CLAIM.test(sql))).toHaveLength(1);
  });

  it("of a principal at its cap claim its run held back the moment one of its runs ends", async () => {
    let release: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    stub = closing(
      await startOpenAIStreamStub(() => {
        asked += 1;
        return { text: ["Done ", "now."], ...(asked === 1 && { pause: { index: 1, until: first } }) };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = closing(await startTestApp(backend, { runtime: { model, concurrency: 2, maxRunningPerPrincipal: 1, ...NO_SWEEP, sandboxDir: sandboxDir() } }));
    const { run: running } = await admit(t.client, { question: "First." });
    while (asked === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    // Announced while its principal's one place is taken: the claim it wakes passes it over.
    const { run: held } = await admit(t.client, { question: "Second." });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(asked).toBe(1);
    release();
    expect((await settled(t.client, running.id)).status).toBe("SUCCEEDED");
    expect((await settled(t.client, held.id, 10_000)).status).toBe("SUCCEEDED");
  });
});

describe.runIf(backends.includes("postgres"))("a worker's run queue", () => {
  it("is fetched only by claims that took runs, one delivery per run claimed", async () => {
    const opened = await openMigratedTestDatabase("postgres");
    // Dropped once the app and the queue closed (closing: the last opened first).
    closing({ close: () => opened.dispose() });
    const queue = closing(await PgBossRunQueue.start({ url: opened.url!, logger: silentLogger }));
    // The queue's fetches, counted as they are sent (pg-boss sends each as one statement), and how many jobs each asked for.
    const boss = (queue as unknown as { boss: { fetch: (name: string, options: { batchSize: number }) => Promise<unknown> } }).boss;
    const fetch = boss.fetch.bind(boss);
    const fetched: number[] = [];
    boss.fetch = (name, options) => {
      fetched.push(options.batchSize);
      return fetch(name, options);
    };
    const model = new ScriptedModel({ name: "queued", steps: () => ({ content: "Done." }) });
    const database = async () => ({ db: opened.db, dispose: async () => undefined });
    t = closing(await startTestApp("postgres", { database, runQueue: queue, runtime: { model, ...NO_SWEEP, sandboxDir: sandboxDir() } }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The worker's first pass claimed nothing (nothing was queued): no fetch.
    expect(fetched).toEqual([]);
    const { run } = await admit(t.client, { question: "Queued." });
    expect((await settled(t.client, run.id, 30_000)).status).toBe("SUCCEEDED");
    await new Promise((resolve) => setTimeout(resolve, 500));
    // One fetch of one delivery, by the claim that took the run; the round's next claim and the freed slot's none.
    expect(fetched).toEqual([1]);
    const reader = new pg.Client({ connectionString: opened.url });
    await reader.connect();
    try {
      const jobs = await reader.query<{ state: string }>("SELECT state::text FROM pgboss.job WHERE name = 'dossier-run-ready'");
      expect(jobs.rows).toEqual([{ state: "completed" }]);
    } finally {
      await reader.end();
    }
  }, 60_000);
});
