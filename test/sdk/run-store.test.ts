// createRunStore against a running server whose model is a real HTTP server streaming the
// OpenAI protocol slowly: the answer as a UI shows it, a resume from the middle (a page reload)
// with neither a repeat nor a gap, listeners told once per frame rather than per delta, and the
// actions a UI offers — stop, approve.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { createRunStore, type RunSnapshot, type RunStore, type RunStoreOptions } from "../../sdk/run-store.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitTool } from "../support/viewer-browser.js";

const PIECES = Array.from({ length: 40 }, (_, i) => `word${i} `);
const ANSWER = PIECES.join("");

/** A Web Storage stand-in that outlives the stores, as sessionStorage outlives a page. */
const memoryStorage = () => {
  const items = new Map<string, string>();
  return { getItem: (key: string) => items.get(key) ?? null, setItem: (key: string, value: string) => void items.set(key, value) };
};

/** A promise the test resolves when it wants. */
function opening() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Follows a store: every snapshot it told of, and a way to wait for one. */
function watch(store: RunStore) {
  const seen: RunSnapshot[] = [];
  const unsubscribe = store.subscribe(() => seen.push(store.getSnapshot()));
  const until = async (test: (snapshot: RunSnapshot) => boolean, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (!test(store.getSnapshot())) {
      if (Date.now() > deadline) throw new Error(`timed out; last snapshot ${JSON.stringify(store.getSnapshot())}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return store.getSnapshot();
  };
  return { seen, until, unsubscribe };
}

describe("createRunStore against a running server", () => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  let client: DossierClient;
  let workspaceId: string;

  /** A "[cut]" question's first reply is cut off after "The partial reply", once `cut` opens; its retry writes once `retry` opens. */
  const gates = { asked: 0, cut: opening(), retry: opening() };

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body) => {
      const question = body.messages.findLast((m) => m.role === "user")?.content ?? "";
      const answered = body.messages.some((m) => m.role === "tool");
      if (question.endsWith("[cut]")) {
        if ((gates.asked += 1) === 1) return { text: ["The ", "partial ", "reply"], pause: { index: 2, until: gates.cut.opened }, cut: "socket" };
        return { text: PIECES, gapMs: 30, pause: { index: 0, until: gates.retry.opened } };
      }
      // The question comes last in the user message, after the workspace's context.
      if (question.endsWith("[deploy]") && !answered) return { toolCalls: [{ id: "call_deploy", name: "deploy", fragments: ['{"target":', '"production"}'] }] };
      return { text: PIECES, gapMs: question.endsWith("[slow]") ? 80 : 30 };
    });
    t = await startTestApp("pglite", {
      listen: true,
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-run-store-")),
        extraTools: [waitTool("deploy", 10)],
        approvals: { rules: { deploy: "always" } },
        leaseMs: 30_000,
        // The cut reply's run is handed back to be retried half a second later: a claim pass
        // looks for it then, not at the lease sweep's default interval (a third of the lease).
        sweepMs: 200,
      },
    });
    client = t.connect();
    workspaceId = (await createWorkspace(client)).id;
  });
  afterAll(async () => {
    await client?.close();
    await t?.close();
    await stub?.close();
  });

  const ask = async (question: string) => (await admit(client, { workspaceId, question })).run.id;

  it("shows the answer as it is written, and after a reload from the middle the same text, then exactly the rest", async () => {
    const runId = await ask("Answer [slow]");
    const storage = memoryStorage();
    const options: RunStoreOptions = { storage };
    const first = createRunStore(client, runId, options);
    const page1 = watch(first);
    const middle = await page1.until((s) => s.answer.length > 40);
    expect(middle.status).toBe("RUNNING");
    expect(ANSWER.startsWith(middle.answer)).toBe(true);
    expect(middle.answer.length).toBeLessThan(ANSWER.length);
    // The page goes away: its store with it.
    first.close();
    const shownBefore = first.getSnapshot().answer;

    const second = createRunStore(client, runId, options);
    // The reloaded page shows at once what the first one showed.
    expect(second.getSnapshot().answer).toBe(shownBefore);
    const page2 = watch(second);
    const final = await page2.until((s) => s.done);
    expect(final.status).toBe("SUCCEEDED");
    expect(final.answer).toBe(ANSWER);
    // Never a text the model did not write so far: no repeat, no gap at any moment.
    for (const snapshot of [...page1.seen, ...page2.seen]) expect(ANSWER.startsWith(snapshot.answer), snapshot.answer).toBe(true);
    expect(final.trace.modelCalls).toBe(1);
    expect(final.trace.tokens).toMatchObject({ input: 50, output: 10 });
    expect(final.trace.durationMs).toBeGreaterThan(0);
    second.close();

    // A store created after the run settled, from the same storage, shows the answer without asking for output.
    const later = createRunStore(client, runId, options);
    expect(later.getSnapshot().answer).toBe(ANSWER);
    later.close();
  });

  it("resumes after a position the app stored: its text is exactly the rest", async () => {
    const runId = await ask("Answer again [slow]");
    const first = createRunStore(client, runId);
    const page1 = watch(first);
    const middle = await page1.until((s) => s.answer.length > 30);
    first.close();
    const { answer: had, seq } = first.getSnapshot();

    const second = createRunStore(client, runId, { afterSeq: seq });
    const final = await watch(second).until((s) => s.done);
    expect(middle.answer).toBe(had);
    expect(had + final.answer).toBe(ANSWER);
    second.close();
  });

  it("tells its listeners once per frame however many deltas arrive, with a new snapshot only then", async () => {
    const runId = await ask("Answer");
    let deltas = 0;
    const counting: DossierClient = {
      ...client,
      watchRun: (id, options) => {
        const updates = client.watchRun(id, options);
        return (async function* () {
          for await (const update of updates) {
            if (update.kind === "TEXT_DELTA") deltas += 1;
            yield update;
          }
        })();
      },
    };
    // A slow frame (250 ms): several deltas (one every 30 ms or so) arrive within each.
    const store = createRunStore(counting, runId, { schedule: (flush) => setTimeout(flush, 250) });
    const followed = watch(store);
    const final = await followed.until((s) => s.done);
    store.close();
    expect(final.answer).toBe(ANSWER);
    expect(deltas).toBeGreaterThan(4);
    expect(followed.seen.length).toBeLessThan(deltas);
    // Between two notifications the snapshot stays the same object (what useSyncExternalStore needs).
    expect(store.getSnapshot()).toBe(final);
  });

  it("lists a held tool call and its pending approval; approve() lets it run and the run answers", async () => {
    const runId = await ask("Please deploy it [deploy]");
    const store = createRunStore(client, runId);
    const followed = watch(store);
    const waiting = await followed.until((s) => s.status === "WAITING" && s.pendingApprovals.length === 1 && s.toolCalls.length === 1);
    expect(waiting.toolCalls[0]).toMatchObject({ id: "call_deploy", name: "deploy", arguments: '{"target":"production"}', status: "WAITING_APPROVAL" });
    expect(waiting.pendingApprovals[0]).toMatchObject({ toolName: "deploy", toolCallId: "call_deploy" });

    expect(await store.approve()).toEqual({ ok: true });
    const final = await followed.until((s) => s.done);
    expect(final.status).toBe("SUCCEEDED");
    expect(final.pendingApprovals).toEqual([]);
    expect(final.toolCalls).toEqual([expect.objectContaining({ id: "call_deploy", name: "deploy", status: "OK", result: "deploy waited 10 ms" })]);
    expect(final.answer).toBe(ANSWER);
    expect(final.trace.toolCalls).toBeGreaterThanOrEqual(1);
    store.close();
  });

  it("drops the text of a reply cut off mid-stream: only the text of the call that retried it shows", async () => {
    const runId = await ask("Answer [cut]");
    const store = createRunStore(client, runId);
    const { seen, until, unsubscribe } = watch(store);
    await until((snapshot) => snapshot.answer === "The partial ");
    gates.cut.open();
    // The cut call ended (an error span, MESSAGE_DONE): its text is gone before the retry writes anything.
    const cut = await until((snapshot) => snapshot.answer === "" && snapshot.modelCalls.length === 1);
    expect(cut.modelCalls.map((call) => call.text)).toEqual([""]);
    const dropped = seen.length;
    gates.retry.open();
    const done = await until((snapshot) => snapshot.done);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: ANSWER });
    expect(done.modelCalls.map((call) => call.text)).toEqual(["", ANSWER]);
    // From the cut on, no snapshot showed any of the cut reply's text.
    expect(seen.slice(dropped).filter((snapshot) => snapshot.answer.includes("partial"))).toEqual([]);
    unsubscribe();
    store.close();
  });

  it("stop() cancels the run mid-answer and the store ends with it", async () => {
    const runId = await ask("Answer, to be stopped [slow]");
    const store = createRunStore(client, runId);
    const followed = watch(store);
    await followed.until((s) => s.answer.length > 10);
    expect(await store.stop()).toEqual({ ok: true });
    const final = await followed.until((s) => s.done);
    expect(final.status).toBe("CANCELLED");
    expect(ANSWER.startsWith(final.answer)).toBe(true);
    expect(final.answer.length).toBeLessThan(ANSWER.length);
    store.close();
  });
});
