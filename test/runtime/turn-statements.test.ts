// What one turn of a run costs the database: from one model request to the next, with one instant
// built-in tool call between (task_list), or six run concurrently, the SQL statements and the
// transactions the runtime sends. A turn's writes are few and batched; this pins their number so that a change which adds
// a statement to every turn of every run is seen.
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
import { FENCE_CHECK, TRANSACTION_CONTROL, WORKER_PASSES } from "../support/statement-patterns.js";

/** Statements one steady turn sends, and the transactions among them (the rest are single statements). */
const PER_TURN = { statements: 3, transactions: 0 };

const TOOL_TURNS = 3;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

describe.each(backends)("one turn's SQL on %s", (backend) => {
  // Six instant calls' results are known together and logged together (runtime/loop/result-group.ts).
  it.each([1, 6])(`with %i tool calls is ${PER_TURN.statements} statements in ${PER_TURN.transactions} transactions`, async (calls) => {
    const statements: string[] = [];
    /** Per run (its key in the question), the number of model requests it made so far. */
    const turns = new Map<string, number>();
    /** Per run, called when it asked for its final answer. */
    const answered = new Map<string, () => void>();
    stub = closing(
      await startOpenAIStreamStub((request) => {
        const key = /\[turns (\d+) (\S+) (\d+)\]/.exec(JSON.stringify(request.messages))!;
        const turn = (turns.get(key[2]!) ?? 0) + 1;
        turns.set(key[2]!, turn);
        if (turn > Number(key[1])) answered.get(key[2]!)?.();
        if (turn <= Number(key[1]))
          return {
            toolCalls: Array.from({ length: Number(key[3]) }, (_, i) => ({
              id: `call_${turn}_${i}`,
              name: "task_list",
              fragments: [JSON.stringify({ action: "add", title: `task ${turn}.${i}` })],
            })),
          };
        return { text: ["Done."] };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = closing(
      await startTestApp(backend, {
        database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
        // The scheduler looks at the schedules once at start, not again while the turns are counted.
        runtime: { model, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-turn-sql-")) },
      }),
    );
    /**
     * A whole run's statements, from its admission to its end. A turn's trace records are written
     * behind its work, some of them after the next model request went out: a turn's cost is the
     * difference between two runs that differ only in their number of turns.
     */
    const runOf = async (toolTurns: number, key: string) => {
      const done = new Promise<void>((resolve) => answered.set(key, resolve));
      const from = statements.length;
      const { run } = await admit(t!.client, { question: `Plan the week. [turns ${toolTurns} ${key} ${calls}]` });
      await done;
      // The run's end and the last of its trace are written once no statement came for a while.
      for (let seen = -1; seen !== statements.length; ) {
        seen = statements.length;
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      const sent = statements.slice(from);
      expect((await settled(t!.client, run.id)).status).toBe("SUCCEEDED");
      if (process.env.TURN_SQL) {
        const { writeFileSync } = await import("node:fs");
        writeFileSync(`${process.env.TURN_SQL}-${backend}-${key}.sql`, sent.map((sql) => sql.replace(/\s+/g, " ").slice(0, 160)).join("\n"));
      }
      return {
        statements: sent.filter((sql) => !TRANSACTION_CONTROL.test(sql) && !WORKER_PASSES.test(sql)).length,
        transactions: sent.filter((sql) => FENCE_CHECK.test(sql)).length,
      };
    };
    // A first run warms what is read once per process (prices, profiles).
    await runOf(1, "warm");
    const short = await runOf(1, "short");
    const long = await runOf(1 + TOOL_TURNS, "long");
    expect({
      statements: (long.statements - short.statements) / TOOL_TURNS,
      transactions: (long.transactions - short.transactions) / TOOL_TURNS,
    }).toEqual(PER_TURN);
  });
});
