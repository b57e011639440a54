// Stop modes (cancelRun's mode) against a real HTTP server streaming the chat-completions protocol,
// on PGlite and PostgreSQL: NOW keeps exactly the text subscribers saw, AFTER_TURN lets the turn's
// two parallel calls finish and asks the model nothing more, CONCLUDE stops the tools and makes
// exactly one more request — without tools — whose answer a workspace run publishes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CancelMode, CancelRunDocument, RunOutputDocument } from "../../sdk/generated/graphql.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { openDatabase } from "../../src/db/open-database.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { type ChatBody, type OpenAIStreamStub, startOpenAIStreamStub, type StubTurn } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil, withTimeout } from "../support/wait.js";

const PIECES = Array.from({ length: 12 }, (_, i) => `piece ${i}; `);
const CONCLUSION = ["Best answer ", "from the evidence so far."];
const lookups = (tag: string) => [
  { id: `${tag}_a`, name: "slow_lookup", fragments: ['{"q":"a"}'] },
  { id: `${tag}_b`, name: "slow_lookup", fragments: ['{"q":"b"}'] },
];

type Body = ChatBody & { tools?: unknown[] };

/** A tool whose calls wait until the test lets them go (or the run stops them). */
function slowLookup() {
  const started: string[] = [];
  let release: () => void = () => undefined;
  let released = new Promise<void>((resolve) => (release = resolve));
  const tool: Tool = {
    schema: { name: "slow_lookup", description: "Looks something up, slowly.", parameters: { type: "object", properties: { q: { type: "string" } } } },
    async execute(args, { signal }) {
      started.push((args as { q: string }).q);
      await new Promise<void>((resolve, reject) => {
        void released.then(resolve);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
      return `found ${(args as { q: string }).q}`;
    },
  };
  return {
    tool,
    started,
    release: () => release(),
    reset() {
      started.length = 0;
      released = new Promise<void>((resolve) => (release = resolve));
    },
  };
}

/** The run's question among the user messages (a workspace run's context comes before it). */
const question = (body: Body) =>
  body.messages.flatMap((m) => (m.role === "user" ? [/(?:^|\n)((?:now|after|conclude|across):[^\n]*)/.exec(m.content ?? "")?.[1]] : [])).find(Boolean) ?? "";

describe.each(backends)("stop modes (%s)", (backend) => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  const requests: Body[] = [];
  const lookup = slowLookup();
  let letAnswerGoOn: () => void = () => undefined;
  const answerPaused = new Promise<void>((resolve) => (letAnswerGoOn = resolve));

  const cancel = async (runId: string, mode: CancelMode) => {
    const result = (await t.client.request(CancelRunDocument, { input: { runId, mode } })).cancelRun;
    if (result.__typename !== "CancelRunSuccess") throw new Error(result.message);
    return result.run;
  };
  const asked = (tag: string) => requests.filter((body) => question(body).startsWith(tag));

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body: Body): StubTurn => {
      requests.push(body);
      const q = question(body);
      const toolResults = body.messages.filter((m) => m.role === "tool").length;
      // The concluding request: no tools offered, the instruction last.
      if (!body.tools?.length) return { text: CONCLUSION };
      if (q.startsWith("now")) return { text: PIECES, gapMs: 5, pause: { index: 5, until: answerPaused } };
      if (toolResults === 0) return { toolCalls: lookups(q.split(" ")[0]!) };
      return { text: ["done."] };
    });
    t = await startTestApp(backend, {
      listen: true,
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-stop-")),
        extraTools: [lookup.tool],
      },
    });
  });
  afterAll(async () => {
    letAnswerGoOn();
    lookup.release();
    await t?.close();
    await stub?.close();
  });

  it("NOW mid-answer keeps exactly the text subscribers received as the answer, asks the model nothing more and leaves the trace ended", async () => {
    const { run } = await admit(t.client, { question: "now: write at length" });
    const output = t.connect().subscribe(RunOutputDocument, { runId: run.id });
    let text = "";
    // The stub writes five pieces, then holds the rest back: the stop lands mid-answer.
    for (;;) {
      const next = await withTimeout(output.next(), 20_000);
      if (next.done) throw new Error("runOutput ended before the stop");
      if (next.value.runOutput.kind === "TEXT_DELTA") text += next.value.runOutput.text;
      if (text === PIECES.slice(0, 5).join("")) break;
    }
    const stopped = await cancel(run.id, "NOW");
    expect(stopped).toMatchObject({ status: "CANCELLED", stopRequest: { mode: "NOW" } });
    // Whatever else arrives before the stream ends was streamed before the stop too.
    for (let next = await withTimeout(output.next(), 20_000); !next.done; next = await withTimeout(output.next(), 20_000)) {
      if (next.value.runOutput.kind === "TEXT_DELTA") text += next.value.runOutput.text;
    }
    const view = await waitUntil(async () => {
      const current = (await t.client.runTrace(run.id))!;
      return current.answer !== null ? current : undefined;
    }, 10_000);
    expect(view).toMatchObject({ status: "CANCELLED", answer: text, answerComplete: false, concludedEarly: false, stopRequest: { mode: "NOW" } });
    letAnswerGoOn();
    expect(asked("now")).toHaveLength(1);
    expect(view.trace!.endedAt).not.toBeNull();
    expect(view.trace!.spans.filter((span) => span.endedAt === null)).toEqual([]);
  });

  it("AFTER_TURN during two parallel tool calls lets both finish and log their results, then ends CANCELLED with no further model request", async () => {
    lookup.reset();
    const { run } = await admit(t.client, { question: "after: look both up" });
    await waitUntil(() => (lookup.started.length === 2 ? true : undefined), 20_000);
    const stop = await cancel(run.id, "AFTER_TURN");
    // Pending: the run goes on with its turn.
    expect(stop).toMatchObject({ status: "RUNNING", stopRequest: { mode: "AFTER_TURN" } });
    // A second request of another mode answers with the first; it does not replace it.
    const again = await cancel(run.id, "CONCLUDE");
    expect(again).toMatchObject({ status: "RUNNING", stopRequest: { mode: "AFTER_TURN", requestedAt: stop.stopRequest!.requestedAt } });
    lookup.release();
    const view = await settled(t.client, run.id);
    expect(view).toMatchObject({ status: "CANCELLED", answer: null, answerComplete: false, stopRequest: { mode: "AFTER_TURN" } });
    const results = view.messages.edges.map((edge) => edge.node).filter((message) => message.role === "TOOL");
    expect(results.map((message) => message.content).sort()).toEqual(["found a", "found b"]);
    expect(asked("after")).toHaveLength(1);
    expect(view.trace!.spans.filter((span) => span.endedAt === null)).toEqual([]);
    const attempt = view.trace!.spans.find((span) => span.kind === "ATTEMPT")!;
    expect(attempt.events.some((event) => event.kind === "STOP_REQUESTED")).toBe(true);
  });

  it("CONCLUDE stops the tools, makes exactly one more request without tools, and the workspace run publishes its answer, SUCCEEDED", async () => {
    lookup.reset();
    const workspace = await createWorkspace(t.client);
    const { run } = await admit(t.client, { question: "conclude: look both up", workspaceId: workspace.id });
    await waitUntil(() => (lookup.started.length === 2 ? true : undefined), 20_000);
    const stop = await cancel(run.id, "CONCLUDE");
    expect(stop).toMatchObject({ stopRequest: { mode: "CONCLUDE" } });
    const view = await settled(t.client, run.id);
    expect(view).toMatchObject({
      status: "SUCCEEDED",
      answer: CONCLUSION.join(""),
      answerComplete: true,
      concludedEarly: true,
      publicationOutcome: "PUBLISHED",
    });
    const made = asked("conclude");
    expect(made).toHaveLength(2);
    expect(made[1]!.tools ?? []).toEqual([]);
    expect(made[1]!.messages.at(-1)).toMatchObject({ role: "user", content: expect.stringContaining("best answer") });
    // The stopped calls have no result: the log records them as interrupted, so the request was valid.
    expect(made[1]!.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["conclude:_a", "conclude:_b"]);
    expect(view.trace!.spans.filter((span) => span.endedAt === null)).toEqual([]);
    const root = view.trace!.spans.find((span) => span.kind === "RUN")!;
    expect(root.events.filter((event) => event.kind === "STOP_REQUESTED")).toHaveLength(1);
  });
});

// Two instances on one PostgreSQL database with no event bus between them: the stop reaches the
// instance executing the run only through the run row — its lease renewal, its read before each
// model request.
describe.runIf(backends.includes("postgres"))("a stop requested through another instance", () => {
  let stub: OpenAIStreamStub;
  let database: { url: string; drop(): Promise<void> };
  let a: TestApp;
  let b: TestApp;
  const requests: Body[] = [];
  const lookup = slowLookup();
  const onDatabase = async () => {
    const db = await openDatabase({ kind: "postgres", url: database.url });
    return { db, dispose: () => db.close() };
  };

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body: Body): StubTurn => {
      requests.push(body);
      if (!body.tools?.length) return { text: CONCLUSION };
      return body.messages.some((m) => m.role === "tool") ? { text: ["done."] } : { toolCalls: lookups(question(body).split(" ")[0]!) };
    });
    database = await createPostgresDatabase();
    a = await startTestApp("postgres", {
      database: onDatabase,
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-stop-")),
        extraTools: [lookup.tool],
        leaseMs: 1_500,
      },
    });
    b = await startTestApp("postgres", { database: onDatabase });
  });
  afterAll(async () => {
    lookup.release();
    await b?.close();
    await a?.close();
    await stub?.close();
    await database?.drop();
  });

  const asked = (tag: string) => requests.filter((body) => question(body).startsWith(tag));

  it("CONCLUDE through instance B stops the tools instance A executes and A concludes with one request without tools", async () => {
    lookup.reset();
    const { run } = await admit(b.client, { question: "across: conclude" });
    await waitUntil(() => (lookup.started.length === 2 ? true : undefined), 20_000);
    const stopped = (await b.client.request(CancelRunDocument, { input: { runId: run.id, mode: "CONCLUDE" } })).cancelRun;
    expect(stopped).toMatchObject({ run: { status: "RUNNING", stopRequest: { mode: "CONCLUDE" } } });
    // The tools are never let go: only the stop ends them.
    const view = await settled(b.client, run.id);
    expect(view).toMatchObject({ status: "SUCCEEDED", answer: CONCLUSION.join(""), concludedEarly: true });
    expect(asked("across: conclude").map((body) => (body.tools?.length ? "with tools" : "without tools"))).toEqual(["with tools", "without tools"]);
    expect(new Set(view.attempts.map((attempt) => attempt.instance))).toEqual(new Set([a.app.runtime!.worker.workerId]));
  });
});
