// runOutput names each streamed tool call by the id Dossier stores it with: a model that repeats an
// id within a reply, leaves one empty or reuses one of an earlier turn streams each call under the
// id its approval request and its log entry carry, and the deltas of each call add up to exactly
// its own arguments (two calls sharing the model's id are not merged into one).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument, RunOutputDocument, type RunOutputSubscription } from "../../sdk/generated/graphql.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { OWN_CALL_ID_PREFIX } from "../../src/runtime/loop/call-ids.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { admit, expectType } from "../support/fixtures.js";
import { type OpenAIStreamStub, type StubToolCall, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil, withTimeout } from "../support/wait.js";

type Update = RunOutputSubscription["runOutput"];

/** The first reply: one call that runs without approval, whose id the second reply reuses. */
const EARLIER: StubToolCall[] = [{ id: "call_early", name: "note", fragments: ['{"text":', '"first turn"}'] }];
/** The second reply: two calls sharing one id, one without an id, one reusing the earlier turn's; each held for approval. */
const HELD: StubToolCall[] = [
  { id: "call_same", name: "write_record", fragments: ['{"title":', '"alpha",', '"n":1}'] },
  { id: "call_same", name: "write_record", fragments: ['{"title":', '"beta",', '"n":2}'] },
  { id: "", name: "write_record", fragments: ['{"title":', '"gamma",', '"n":3}'] },
  { id: "call_early", name: "write_record", fragments: ['{"title":', '"delta",', '"n":4}'] },
];

const tool = (name: string): Tool => ({
  schema: { name, description: `${name} something`, parameters: { type: "object" } },
  execute: async () => `${name} done`,
});

describe("runOutput's tool call ids", () => {
  let stub: OpenAIStreamStub;
  let t: TestApp;

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body) => {
      const results = body.messages.filter((m) => m.role === "tool").length;
      if (results === 0) return { toolCalls: EARLIER };
      if (results === 1) return { toolCalls: HELD };
      return { text: ["All declined."] };
    });
    t = await startTestApp("pglite", {
      listen: true,
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-output-ids-")),
        extraTools: [tool("note"), tool("write_record")],
        approvals: { rules: { "write_*": "always", "*": "never" } },
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stub?.close();
  });

  it("streams each call's arguments under the id of its approval and its log entry, never merged with another's", { timeout: 90_000 }, async () => {
    await t.app.runtime!.worker.stop(); // the subscriber listens before the run starts
    const { run } = await admit(t.client, { question: "Write the records" });
    const stream = t.connect().subscribe(RunOutputDocument, { runId: run.id });
    const updates: Update[] = [];
    const received = (async () => {
      for (;;) {
        const next = await withTimeout(stream.next(), 30_000);
        if (next.done) return;
        updates.push(next.value.runOutput);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.app.runtime!.worker.start();

    const held = await waitUntil(async () => {
      const view = expectType((await t.client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return view.status === "WAITING" ? view : undefined;
    }, 30_000);
    const pending = held.pendingApprovals.edges.map((edge) => edge.node);
    expect(pending).toHaveLength(HELD.length);
    // Both model calls' output has ended (MESSAGE_DONE follows each call's last delta).
    await waitUntil(() => (updates.filter((u) => u.kind === "MESSAGE_DONE").length >= 2 ? true : undefined), 30_000);
    const streamed = new Map<string, string>();
    for (const u of updates) if (u.kind === "TOOL_CALL_DELTA") streamed.set(u.toolCallId!, (streamed.get(u.toolCallId!) ?? "") + u.text);

    const messages = await t.app.db.prisma.message.findMany({ where: { runId: idOfType(run.id, "Run") }, orderBy: { seq: "asc" } });
    const logged = messages.flatMap((m) => (m.role === "ASSISTANT" ? ((m.toolCalls as { id: string; arguments: string }[] | null) ?? []) : []));
    // What a UI assembled from runOutput is exactly the log's calls, each under its stored id.
    expect(streamed).toEqual(new Map(logged.map((call) => [call.id, call.arguments])));
    const [early, ...later] = logged;
    expect(early!.id).toBe("call_early");
    // The repeated, the empty and the reused id each got one of Dossier's own.
    expect(later.map((call) => call.id)).toEqual([
      "call_same",
      expect.stringMatching(new RegExp(`^${OWN_CALL_ID_PREFIX}`)),
      expect.stringMatching(new RegExp(`^${OWN_CALL_ID_PREFIX}`)),
      expect.stringMatching(new RegExp(`^${OWN_CALL_ID_PREFIX}`)),
    ]);
    expect(new Set(logged.map((call) => call.id)).size).toBe(5);
    expect(later.map((call) => call.arguments)).toEqual(HELD.map((call) => call.fragments.join("")));
    // …and each approval it must show names a streamed call, with that call's arguments.
    for (const approval of pending) expect(JSON.parse(streamed.get(approval.toolCallId) ?? "null")).toEqual(JSON.parse(approval.arguments));
    expect(pending.map((approval) => approval.toolCallId).sort()).toEqual(later.map((call) => call.id).sort());

    for (const approval of pending) {
      const decided = await t.client.request(DecideToolCallDocument, {
        input: { runId: run.id, toolCallId: approval.toolCallId, decision: "REJECT", reason: "not now" },
      });
      expectType(decided.decideToolCall, "DecideToolCallSuccess");
    }
    expect((await settled(t.client, run.id, 30_000)).status).toBe("SUCCEEDED");
    await received;
    expect(updates.at(-1)?.kind).toBe("RUN_DONE");
  });
});
