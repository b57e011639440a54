// What one turn of a run costs the database: from one model request to the next, with one instant
// built-in tool call between (task_list), the SQL statements and the transactions the runtime
// sends. A turn's writes are few and batched; this pins their number so that a change which adds
// a statement to every turn of every run is seen.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Statements one steady turn sends, and how many of them commit a transaction. */
const PER_TURN = { statements: 24, transactions: 3 };

const TOOL_TURNS = 4;

/** How a commit shows in the statement log (the embedded database's driver names its own). */
const COMMIT = /^\s*(COMMIT\b|-- Implicit "COMMIT")/i;
const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK\b|-- Implicit "(BEGIN|COMMIT|ROLLBACK)")/i;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  await stub?.close();
  t = undefined;
  stub = undefined;
});

describe.each(backends)("one turn's SQL on %s", (backend) => {
  it(`is ${PER_TURN.statements} statements in ${PER_TURN.transactions} transactions`, async () => {
    const statements: string[] = [];
    /** Where in `statements` each model request arrived. */
    const requestsAt: number[] = [];
    let answered!: () => void;
    const done = new Promise<void>((resolve) => (answered = resolve));
    stub = await startOpenAIStreamStub(() => {
      requestsAt.push(statements.length);
      const turn = requestsAt.length;
      if (turn <= TOOL_TURNS)
        return { toolCalls: [{ id: `call_${turn}`, name: "task_list", fragments: [JSON.stringify({ action: "add", title: `task ${turn}` })] }] };
      answered();
      return { text: ["Done."] };
    });
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      // The scheduler looks at the schedules once at start, not again while the turns are counted.
      runtime: { model, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-turn-sql-")) },
    });
    const { run } = await admit(t.client, { question: "Plan the week." });
    await done;
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");

    // Every steady turn (the first has the attempt's start in it, the last the run's end) costs the same.
    const steady: string[][] = [];
    for (let i = 1; i + 1 < TOOL_TURNS; i += 1) steady.push(statements.slice(requestsAt[i], requestsAt[i + 1]));
    if (process.env.TURN_SQL) {
      const { writeFileSync } = await import("node:fs");
      steady.forEach((turn, i) =>
        writeFileSync(`${process.env.TURN_SQL}-${backend}-${i}.sql`, turn.map((sql) => sql.replace(/\s+/g, " ").slice(0, 160)).join("\n")),
      );
    }
    const counts = steady.map((turn) => ({
      statements: turn.filter((sql) => !TRANSACTION_CONTROL.test(sql)).length,
      transactions: turn.filter((sql) => COMMIT.test(sql)).length,
    }));
    expect(counts).toEqual(steady.map(() => PER_TURN));
  });
});
