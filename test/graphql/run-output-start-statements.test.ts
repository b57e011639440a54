// What starting a runOutput subscription costs the database. A client page subscribes right
// after it admits its run, so when a hundred runs start at once every statement here is a round
// trip in the same burst as the runs' claims and first model requests. One statement reads it
// all: that the run is the subscriber's, its trace's expiry, whether it settled without a trace,
// the model calls running now and the trace's changes after the subscriber's position.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RunOutputDocument, type RunOutputSubscription } from "../../sdk/generated/graphql.js";
import { queryRows } from "../../src/db/direct-statements.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type Backend, backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { TRANSACTION_CONTROL, WORKER_PASSES } from "../support/statement-patterns.js";
import { withTimeout } from "../support/wait.js";

type Update = RunOutputSubscription["runOutput"];

const ANSWER = Array.from({ length: 8 }, (_, i) => `piece ${i} of the answer; `);
const CALLS = [{ id: "call_a", name: "task_list", fragments: ['{"action":', '"add","title":', '"Verify"}'] }];
/** The pieces streamed before the model server holds the answer back. */
const BEFORE_PAUSE = 4;
/** The worker's passes, on their own clock beside the subscription (claims, sweeps, schedules, lease renewals, the embedded database's statistics), and transaction control. */
const ELSE = new RegExp(
  `${WORKER_PASSES.source}|${TRANSACTION_CONTROL.source}|^\\s*WITH held AS \\(\\s*SELECT h\\.id, h\\.attempt|^\\s*ANALYZE\\b|AS orphaned FROM run`,
  "i",
);

let t: TestApp | undefined;
let stub: OpenAIStreamStub | undefined;
let release: () => void = () => undefined;
afterEach(async () => {
  release();
  await t?.close();
  await stub?.close();
  t = stub = undefined;
});

/** The app with its worker asking the model server `stub`, on a database opened with `options`. */
const startApp = (stub: OpenAIStreamStub, backend: Backend, options: Parameters<typeof openMigratedTestDatabase>[1]) =>
  startTestApp(backend, {
    database: () => openMigratedTestDatabase(backend, options),
    listen: true,
    runtime: {
      model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
      schedulerPollMs: 3_600_000,
      sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-output-start-")),
    },
  });

describe.each(backends)("starting a runOutput subscription on %s", (backend) => {
  it("reads the run, its trace and what to replay in one statement, and gives the call's text so far, then the rest", async () => {
    const released = new Promise<void>((resolve) => (release = resolve));
    let sent = 0;
    // A first model call that asks for a tool, then one that answers, held back halfway.
    stub = await startOpenAIStreamStub((body) =>
      body.messages.some((m) => m.role === "tool")
        ? { text: ANSWER, gapMs: 5, pause: { index: BEFORE_PAUSE, until: released }, sent: () => (sent += 1) }
        : { toolCalls: CALLS },
    );
    const statements: string[] = [];
    t = await startApp(stub, backend, { onQuery: (sql) => statements.push(sql) });
    const { run } = await admit(t.client, { question: "Answer at length" });
    const runId = idOfType(run.id, "Run")!;
    // The run is in its second model call, half its answer streamed: its trace has changes to replay, the first call's end among them.
    await vi.waitFor(() => expect(sent).toBe(BEFORE_PAUSE), { timeout: 20_000, interval: 20 });
    const prisma = t.app.db.prisma;
    await vi.waitFor(async () => expect(await prisma.span.count({ where: { traceId: runId, kind: "MODEL_CALL", status: "RUNNING" } })).toBe(1));
    expect(await prisma.traceChange.count({ where: { traceId: runId } })).toBeGreaterThan(2);
    await new Promise((resolve) => setTimeout(resolve, 200));

    const from = statements.length;
    const stream = t.connect().subscribe(RunOutputDocument, { runId: run.id })[Symbol.asyncIterator]();
    // A subscriber joining mid-call gets the end of the call before (replayed), then the running call's text so far, in one delta.
    const done = (await withTimeout(stream.next(), 20_000)).value.runOutput as Update;
    expect(done).toMatchObject({ kind: "MESSAGE_DONE" });
    const first = (await withTimeout(stream.next(), 20_000)).value.runOutput as Update;
    expect(first).toMatchObject({ kind: "TEXT_DELTA", text: ANSWER.slice(0, BEFORE_PAUSE).join("") });
    // What the stream reads to start is read by then, or a moment later (well before its first idle check, 5 s).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const starting = statements.slice(from).filter((sql) => !ELSE.test(sql));
    expect(starting).toHaveLength(1);

    release();
    const rest: Update[] = [];
    for (;;) {
      const next = await withTimeout(stream.next(), 20_000);
      if (next.done) break;
      rest.push(next.value.runOutput);
    }
    expect(first.text + rest.flatMap((u) => (u.kind === "TEXT_DELTA" ? [u.text] : [])).join("")).toBe(ANSWER.join(""));
    expect(rest.filter((u) => u.kind !== "TEXT_DELTA").map((u) => u.kind)).toEqual(["MESSAGE_DONE", "RUN_DONE"]);
  });
});

describe.runIf(backends.includes("postgres"))("starting runOutput subscriptions on PostgreSQL", () => {
  it("prepares the start statement and the admission's once per connection, not planned on every call (2.4 and 0.7 ms of PostgreSQL's CPU)", async () => {
    stub = await startOpenAIStreamStub(() => ({ text: ANSWER, gapMs: 5 }));
    // One connection: every statement of the test runs in the session whose prepared statements are read.
    t = await startApp(stub, "postgres", { poolSize: 1, streamPoolSize: 0 });
    const { run } = await admit(t.client, { question: "Answer at length" });
    const prisma = t.app.db.prisma;
    await vi.waitFor(async () => expect((await prisma.run.findUniqueOrThrow({ where: { id: idOfType(run.id, "Run")! } })).status).toBe("SUCCEEDED"), {
      timeout: 20_000,
    });
    // Six subscribers of the settled run, one after the other, each replaying its trace from the start.
    const SUBSCRIBERS = 6;
    for (let i = 0; i < SUBSCRIBERS; i += 1) {
      const kinds: string[] = [];
      for await (const { runOutput } of t.connect().subscribe(RunOutputDocument, { runId: run.id, afterSeq: "0" })) kinds.push(runOutput.kind);
      expect(kinds.at(-1)).toBe("RUN_DONE");
    }
    const prepared = (like: string) =>
      queryRows<{ executions: number; generic: number }>(
        prisma,
        `SELECT (generic_plans + custom_plans)::int AS executions, generic_plans::int AS generic FROM pg_prepared_statements
          WHERE statement LIKE $1 AND statement NOT LIKE '%pg_prepared_statements%'`,
        like,
      );
    // Before: sent unnamed, planned on every call, never prepared. PostgreSQL plans a prepared
    // statement's first five calls for their values, then keeps a plan for all of them.
    expect(await prepared("%FROM run r LEFT JOIN trace t ON t.id = r.id%")).toEqual([{ executions: SUBSCRIBERS, generic: SUBSCRIBERS - 5 }]);
    // The admission's statement too: the runs admitted in a row share one prepared statement.
    for (let i = 1; i < SUBSCRIBERS; i += 1) await admit(t.client, { question: `Answer ${i}` });
    expect(await prepared("%WITH ws AS%")).toEqual([{ executions: SUBSCRIBERS, generic: expect.any(Number) }]);
  });
});
