// A runOutput subscriber's stream starts on PostgreSQL connections of its own (DB_STREAM_POOL_SIZE):
// while every connection of the main pool is taken — one principal's burst of admissions, a worker
// settling a hundred runs — another's subscription still starts and streams at once, instead of
// queueing behind every statement waiting for the main pool.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunOutputDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ANSWER = Array.from({ length: 6 }, (_, i) => `piece ${i} of the answer; `);
/** How long the main pool's connections are held (a statement queued for one gives up after DB_CONNECT_TIMEOUT_MS, 5 s). */
const HELD_SECONDS = 2;

let t: TestApp | undefined;
let stub: OpenAIStreamStub | undefined;
afterEach(async () => {
  await t?.close();
  await stub?.close();
  t = stub = undefined;
});

describe.runIf(backends.includes("postgres"))("runOutput while the main connection pool is taken", () => {
  it.each([
    { afterSeq: "0", what: "a replay of the whole run" },
    { afterSeq: undefined, what: "the live end" },
  ])("starts a subscription from $what on its own connections, before the main pool frees one", async ({ afterSeq }) => {
    stub = await startOpenAIStreamStub(() => ({ text: ANSWER, gapMs: 5 }));
    const POOL = 2;
    let url = "";
    t = await startTestApp("postgres", {
      database: async () => {
        const opened = await openMigratedTestDatabase("postgres", { poolSize: POOL, streamPoolSize: 1 });
        url = opened.url!;
        return opened;
      },
      listen: true,
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        schedulerPollMs: 3_600_000,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-stream-pool-")),
      },
    });
    const { run } = await admit(t.client, { question: "Answer at length" });
    const prisma = t.app.db.prisma;
    await vi.waitFor(async () => expect((await prisma.run.findUniqueOrThrow({ where: { id: idOfType(run.id, "Run")! } })).status).toBe("SUCCEEDED"), {
      timeout: 20_000,
    });

    // Every connection of the main pool held, and as many statements queued behind them.
    let freed = false;
    const held = Promise.all(
      Array.from({ length: 2 * POOL }, () =>
        prisma.$queryRawUnsafe(`SELECT pg_sleep(${HELD_SECONDS})::text AS slept`).then(() => {
          freed = true;
        }),
      ),
    );
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    try {
      await vi.waitFor(
        async () => {
          const { rows } = await watcher.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(%'");
          expect(rows[0]!.n).toBe(POOL);
        },
        { timeout: 5_000 },
      );
      const kinds: string[] = [];
      const text: string[] = [];
      for await (const { runOutput } of t.connect().subscribe(RunOutputDocument, { runId: run.id, ...(afterSeq && { afterSeq }) })) {
        kinds.push(runOutput.kind);
        if (runOutput.text) text.push(runOutput.text);
      }
      // Before: the subscription's first statement waited for a main connection, behind the queued ones.
      expect(freed).toBe(false);
      expect(kinds.at(-1)).toBe("RUN_DONE");
      // From the start, the replay holds the run's message's end (its text is read from the log, not streamed again).
      if (afterSeq) expect(kinds).toContain("MESSAGE_DONE");
      await held;
    } finally {
      await watcher.end();
    }
  });
});
