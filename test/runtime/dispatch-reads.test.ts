// What stands between a run's claim and its first model request (dispatch): the attempt's opening
// reads (its log, approvals, profile and requests) and the reads of its tools and workspace
// context (its skills, its frozen materials, its MCP servers, the publication it continues). The
// latter do not need the log: they are sent with the opening reads, not after them, so they cost
// no round trip of their own; a run that continues no publication does not read one. The
// embedded database runs one statement at a time, in the order they are sent: a read sent with
// the opening reads runs before the log read completes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MODEL_REQUEST = "-- the run's first model request";
const CLAIM = /^\s*WITH runs AS \(/;
const LOG_READ = /FROM "public"\."message"/;
const READS_WITHOUT_LOG = { materials: /FROM "public"\."run_material"/, skills: /FROM "public"\."skill"/ };
/** The read of the publication a run continues, which a run that continues none does without. */
const CONTINUED_READ = /"Run_continuesPublication"/;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  await stub?.close();
  t = undefined;
  stub = undefined;
});

describe("a run's dispatch on the embedded database", () => {
  it("sends the reads of its tools and workspace context with its opening reads, before its log is read, and only those it needs", async () => {
    const statements: string[] = [];
    let asked = () => {};
    stub = await startOpenAIStreamStub(() => {
      statements.push(MODEL_REQUEST);
      asked();
      return { text: ["Done."] };
    });
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = await startTestApp("pglite", {
      database: () => openMigratedTestDatabase("pglite", { onQuery: (sql) => statements.push(sql) }),
      runtime: { model, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-dispatch-")) },
    });
    /** The statements from a run's claim to its first model request. */
    const dispatchOf = async (question: string) => {
      const from = statements.length;
      const requested = new Promise<void>((resolve) => (asked = resolve));
      const { run } = await admit(t!.client, { question });
      await requested;
      const sent = statements.slice(from);
      expect((await settled(t!.client, run.id)).status).toBe("SUCCEEDED");
      return sent.slice(
        sent.findIndex((sql) => CLAIM.test(sql)),
        sent.indexOf(MODEL_REQUEST),
      );
    };
    // A first run warms what is read once per process (the built-in skills, profiles).
    await dispatchOf("Warm up.");
    const dispatch = await dispatchOf("Which sources disagree?");
    const logRead = dispatch.findLastIndex((sql) => LOG_READ.test(sql));
    expect(logRead).toBeGreaterThan(0);
    for (const [read, pattern] of Object.entries(READS_WITHOUT_LOG)) {
      // The last of them: the admission's answer may read the run's materials too, beside its claim.
      const at = dispatch.findLastIndex((sql) => pattern.test(sql));
      expect({ read, sent: at >= 0, beforeTheLogRead: at < logRead }).toEqual({ read, sent: true, beforeTheLogRead: true });
    }
    // The run continues no publication: the workspace context reads none.
    expect(dispatch.filter((sql) => CONTINUED_READ.test(sql))).toEqual([]);
  });
});
