// What a run's end costs the database: the settle of a run which answered — its status, its
// attempt's end, its spans and trace ended, its conversation's slot given back, its webhook event,
// what it published — is one statement on its own, which carries its fence's check (the run row
// still RUNNING under this attempt and worker) inside itself: no BEGIN, no separate check, no
// COMMIT, each a round trip during which the run's pooled connection waited for the worker's busy
// event loop when many runs end together. Every run ends this way, so a statement added to it is
// one more for every run; this pins their number. A run whose end leaves something to decide (an
// open approval request, a pending proposal, a publication) takes the transition's statements one
// by one, as the tests of those features show; an attempt that lost its run settles nothing
// (settle-equivalence.test.ts).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { FENCE_CHECK, WORKER_PASSES } from "../support/statement-patterns.js";

/** The settle writes the run's end: its finished_at. */
const ENDS_THE_RUN = /\bfinished_at\b/;
/** The settle carries the turn's last trace records (the final reply's event, the turn's end). */
const CARRIES_RECORDS = /\bbatch_input\b/;
/** What is sent after a run's end that is no write of it: a COMMIT (a driver's, or of a read), the read of the conversation's next queued run. */
const NOT_THE_END = /^\s*(COMMIT|-- Implicit "COMMIT")|SELECT DISTINCT ON \(conversation_id\)/;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

/** The settle's own check of the attempt, in the statement that ends the run. */
const CARRIES_THE_FENCE = /\bAND attempt = \$\d+::int AND lease_owner = \$\d+::text AND status = 'RUNNING'/;
/** A transaction opened (a statement on its own opens none; a read's implicit COMMIT is no transaction of the settle). */
const BEGIN = /^\s*(BEGIN|-- Implicit "BEGIN")/i;
/** Runs answering at once in the second test, each in a conversation of its own. */
const RUNS = 8;

/** The statements sent from `from` on, once none came for a while (the runs' ends written), the worker's passes left out. */
async function quietAfter(statements: string[], from: () => number): Promise<string[]> {
  while (from() === -1) await new Promise((resolve) => setTimeout(resolve, 20));
  for (let seen = -1; seen !== statements.length; ) {
    seen = statements.length;
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  return statements.slice(from()).filter((sql) => !WORKER_PASSES.test(sql));
}

describe.each(backends)("a settle's SQL on %s", (backend) => {
  it("is one statement on its own, its fence's check inside it", async () => {
    const statements: string[] = [];
    /** Where the statement log was when the model was asked for the answer. */
    let asked = -1;
    stub = closing(
      await startOpenAIStreamStub(() => {
        asked = statements.length;
        return { text: ["The week ", "is planned."] };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = closing(
      await startTestApp(backend, {
        database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
        runtime: { model, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-settle-sql-")) },
      }),
    );
    const { run } = await admit(t.client, { question: "Plan the week." });
    // Nobody reads the run while it ends: its end is written once no statement came for a while.
    const sent = await quietAfter(statements, () => asked);
    const view = await settled(t.client, run.id);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.answer).toBe("The week is planned.");
    if (process.env.SETTLE_SQL) console.log(sent.map((sql) => sql.replace(/\s+/g, " ").slice(0, 160)).join("\n"));
    const ends = sent.filter((sql) => ENDS_THE_RUN.test(sql));
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatch(CARRIES_THE_FENCE);
    // After the model's answer, two statements: the reply logged with its request's span ended, then
    // the settle carrying the final reply's event and the turn's end.
    const writes = sent.filter((sql) => !NOT_THE_END.test(sql));
    expect(writes).toHaveLength(2);
    expect(writes[1]).toMatch(ENDS_THE_RUN);
    expect(writes[1]).toMatch(CARRIES_RECORDS);
    // From the model's answer on, no statement opened a transaction or checked the fence apart.
    expect({ transactions: sent.filter((sql) => BEGIN.test(sql)).length, fenceChecks: sent.filter((sql) => FENCE_CHECK.test(sql)).length }).toEqual({
      transactions: 0,
      fenceChecks: 0,
    });
  });

  it(`of ${RUNS} runs answering at once is ${RUNS} statements, none in a transaction`, async () => {
    const statements: string[] = [];
    let asked = 0;
    /** Where the statement log was when the last of the runs had its answer. */
    let answered = -1;
    let release: () => void = () => undefined;
    const together = new Promise<void>((resolve) => (release = resolve));
    stub = await startOpenAIStreamStub(() => {
      asked += 1;
      if (asked === RUNS) setTimeout(() => ((answered = statements.length), release()), 300);
      return { text: ["Planned ", "now."], pause: { index: 1, until: together } };
    });
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      runtime: { model, concurrency: RUNS, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-settle-sql-")) },
    });
    const runs = [];
    for (let i = 0; i < RUNS; i += 1) runs.push((await admit(t.client, { question: `Plan week ${i}.` })).run);
    const sent = await quietAfter(statements, () => answered);
    for (const run of runs) expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    const ends = sent.filter((sql) => ENDS_THE_RUN.test(sql));
    expect(ends).toHaveLength(RUNS);
    expect(ends.every((sql) => CARRIES_THE_FENCE.test(sql))).toBe(true);
    // Ending together, each run's end is still two statements: none of the trace's records goes apart.
    expect(sent.filter((sql) => !NOT_THE_END.test(sql))).toHaveLength(2 * RUNS);
    expect(ends.every((sql) => CARRIES_RECORDS.test(sql))).toBe(true);
    expect({ transactions: sent.filter((sql) => BEGIN.test(sql)).length, fenceChecks: sent.filter((sql) => FENCE_CHECK.test(sql)).length }).toEqual({
      transactions: 0,
      fenceChecks: 0,
    });
  });
});
