// What a run's end costs the database: the fenced transaction that settles a run which answered —
// its status, its attempt's end, its spans and trace ended, its conversation's slot given back, its
// webhook event, what it published — is its fence's check and one statement. Every run ends this
// way, so a statement added to it is one more for every run; this pins their number. A run whose end
// leaves something to decide (an open approval request, a pending proposal, a publication) takes
// the transition's statements one by one, as the tests of those features show.
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
import { COMMIT, FENCE_CHECK, TRANSACTION_CONTROL, WORKER_PASSES } from "../support/statement-patterns.js";

/** The settle writes the run's end: its finished_at. */
const ENDS_THE_RUN = /\bfinished_at\b/;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

describe.each(backends)("a settle's SQL on %s", (backend) => {
  it("is the fence's check and one statement, in one transaction", async () => {
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
    while (asked === -1) await new Promise((resolve) => setTimeout(resolve, 20));
    for (let seen = -1; seen !== statements.length; ) {
      seen = statements.length;
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    const sent = statements.slice(asked).filter((sql) => !WORKER_PASSES.test(sql));
    const view = await settled(t.client, run.id);
    expect(view.status).toBe("SUCCEEDED");
    expect(view.answer).toBe("The week is planned.");
    // The run's last fenced transaction: from its fence's check to its COMMIT.
    const begin = sent.findLastIndex((sql) => FENCE_CHECK.test(sql));
    const commit = begin + sent.slice(begin).findIndex((sql) => COMMIT.test(sql));
    const settle = sent.slice(begin, commit);
    if (process.env.SETTLE_SQL) console.log(sent.map((sql) => sql.replace(/\s+/g, " ").slice(0, 160)).join("\n"));
    expect(settle.some((sql) => ENDS_THE_RUN.test(sql))).toBe(true);
    const counted = {
      statements: settle.filter((sql) => !TRANSACTION_CONTROL.test(sql)).length,
      fenceChecks: settle.filter((sql) => FENCE_CHECK.test(sql)).length,
    };
    expect(counted).toEqual({ statements: 2, fenceChecks: 1 });
  });
});
