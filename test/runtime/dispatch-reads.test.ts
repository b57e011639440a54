// What stands between a run's claim and its first model request (dispatch): the attempt's opening
// reads (its log, approvals, profile and requests) and the reads of its tools and workspace
// context (its skills, its frozen materials, its MCP servers, the publication it continues). The
// latter do not need the log: they are sent with the opening reads, not after them, so they cost
// no round trip of their own; a run that continues no publication does not read one. The
// embedded database runs one statement at a time, in the order they are sent: a read sent with
// the opening reads runs before the log read completes. What the claim already knows is not read
// again: a first attempt's requests (read in the claim's statement), its decisions (it has none)
// and, when its question is its conversation's first message, its log. With many runs claimed
// at once, each of these statements is sent once per run: they are pinned here on both databases.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type Backend, backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, startConversation } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MODEL_REQUEST = "-- the run's first model request";
const CLAIM = /^\s*WITH runs AS \(/;
const LOG_READ = /FROM "public"\."message"/;
const READS_WITHOUT_LOG = { materials: /FROM "public"\."run_material"/, skills: /FROM "public"\."skill"/ };
/** The read of the publication a run continues, which a run that continues none does without. */
const CONTINUED_READ = /"Run_continuesPublication"/;
/** Reads the claim already answered for a first attempt: its requests and its decisions asked. */
const CLAIM_KNOWS = { requests: /^\s*SELECT r\.stop_mode/, approvals: /FROM "public"\."tool_approval"/ };
/**
 * A first attempt's statements after its claim's COMMIT, up to its first model request, its
 * question being its conversation's first message: the reads of its skills, its MCP servers and
 * its materials, and the write starting its turn's spans.
 */
const ATTEMPT_START_STATEMENTS = 4;

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

/** A test app on `backend` whose runs ask a stub model; `dispatchOf` gives the statements from a run's claim to its first model request. */
async function dispatching(backend: Backend) {
  const statements: string[] = [];
  let asked = () => {};
  stub = closing(
    await startOpenAIStreamStub(() => {
      statements.push(MODEL_REQUEST);
      asked();
      return { text: ["Done."] };
    }),
  );
  const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
  t = closing(
    await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      runtime: { model, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-dispatch-")) },
    }),
  );
  return async (question: string, conversationId?: string) => {
    const from = statements.length;
    const requested = new Promise<void>((resolve) => (asked = resolve));
    const { run } = await admit(t!.client, { question, ...(conversationId && { conversationId }) });
    await requested;
    const sent = statements.slice(from);
    expect((await settled(t!.client, run.id)).status).toBe("SUCCEEDED");
    return sent.slice(
      sent.findIndex((sql) => CLAIM.test(sql)),
      sent.indexOf(MODEL_REQUEST),
    );
  };
}

/** Statements of others sent meanwhile: the worker's next claims (which find nothing) and the admission's answer (the run's row). */
const OTHERS = [
  /^\s*WITH (RECURSIVE )?running AS/,
  /^SELECT "t0"\."id", "t0"\."owner_id" AS "ownerId", "t0"\."conversation_id"/,
  /^\s*(-- Implicit )?"?(BEGIN|COMMIT|ROLLBACK)/i,
];

/** The statements after the claim's COMMIT, those of others aside. */
const afterClaim = (dispatch: string[]) =>
  dispatch.slice(dispatch.findIndex((sql) => /^\s*(-- Implicit )?"?COMMIT/i.test(sql)) + 1).filter((sql) => !OTHERS.some((other) => other.test(sql)));

describe("a run's dispatch on the embedded database", () => {
  it("sends the reads of its tools and workspace context with its opening reads, before its log is read, and only those it needs", async () => {
    const dispatchOf = await dispatching("pglite");
    // A first run warms what is read once per process (the built-in skills, profiles).
    const conversation = await startConversation(t!.client);
    await dispatchOf("Warm up.", conversation.id);
    // A follow-up: its log is the run before's and its question, read after the claim.
    const dispatch = await dispatchOf("Which sources disagree?", conversation.id);
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

describe.each(backends)("a first attempt's start on %s", (backend) => {
  it(`sends ${ATTEMPT_START_STATEMENTS} statements after its claim, reading nothing the claim knows`, async () => {
    const dispatchOf = await dispatching(backend);
    await dispatchOf("Warm up.");
    const conversation = await startConversation(t!.client);
    for (const conversationId of [undefined, conversation.id]) {
      // A new conversation, or one started empty: the question is the log's first message.
      const start = afterClaim(await dispatchOf("Which sources disagree?", conversationId));
      expect(start.filter((sql) => LOG_READ.test(sql))).toEqual([]);
      for (const [read, pattern] of Object.entries(CLAIM_KNOWS)) expect({ read, sent: start.filter((sql) => pattern.test(sql)) }).toEqual({ read, sent: [] });
      expect(start.map((sql) => sql.replace(/\s+/g, " ").slice(0, 60))).toHaveLength(ATTEMPT_START_STATEMENTS);
    }
    // A follow-up reads its log (the run before's entries), and its requests still come with its claim.
    const start = afterClaim(await dispatchOf("And then?", conversation.id));
    expect(start.filter((sql) => LOG_READ.test(sql))).toHaveLength(1);
    expect(start.filter((sql) => CLAIM_KNOWS.requests.test(sql))).toEqual([]);
    expect(start).toHaveLength(ATTEMPT_START_STATEMENTS + 1);
  });
});
