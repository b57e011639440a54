// Tool calls of one model message have ids of their own as Dossier stores them: a model that
// gives two calls one id (or none) cannot make a person approve one call and run another. The
// approval lists every held call; a call nobody approved never executes.
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { CallIds, OWN_CALL_ID_PREFIX } from "../../src/runtime/loop/call-ids.js";
import type { ToolCall } from "../../src/runtime/ports/model.js";
import { costConfirmationId } from "../../src/runtime/loop/cost-caps.js";
import { idOfType } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

/** A whole reply's calls as model call `spanId` stores them, each reported in order. */
const withUniqueCallIds = (calls: readonly ToolCall[], used: ReadonlySet<string>, spanId: string): ToolCall[] =>
  new CallIds(spanId, used).reply(
    calls,
    calls.map((_, index) => index),
  );

function recordingTool(name: string, executed: string[]): Tool {
  return {
    schema: { name, description: `${name} something`, parameters: { type: "object" } },
    execute: async (args) => {
      executed.push(`${name} ${JSON.stringify(args)}`);
      return `${name} done`;
    },
  };
}

describe("ids of one message's tool calls", () => {
  it("a repeated or empty id gets Dossier's own, the same for the same reply; unique ids are kept", () => {
    const calls = [
      { id: "x", name: "a", arguments: "{}" },
      { id: "x", name: "b", arguments: "{}" },
      { id: "", name: "c", arguments: "{}" },
      { id: "y", name: "d", arguments: "{}" },
    ];
    const ids = withUniqueCallIds(calls, new Set(), "span-1").map((call) => call.id);
    expect(ids[0]).toBe("x");
    expect(ids[3]).toBe("y");
    expect(ids[1]).toMatch(new RegExp(`^${OWN_CALL_ID_PREFIX}`));
    expect(new Set(ids).size).toBe(4);
    expect(withUniqueCallIds(calls, new Set(), "span-1").map((call) => call.id)).toEqual(ids);
    // A later call whose id equals the one an earlier call got from Dossier gets another: ids are fixed in the order calls stream.
    const clash = withUniqueCallIds([{ ...calls[0]! }, { ...calls[1]! }, { id: ids[1]!, name: "e", arguments: "{}" }], new Set(), "span-1").map((c) => c.id);
    expect(new Set(clash).size).toBe(3);
    expect(clash[1]).toBe(ids[1]);
  });

  it("an id the run used before gets Dossier's own, unused by the run, the same for the same reply and run", () => {
    const calls = [
      { id: "call_1", name: "a", arguments: "{}" },
      { id: "call_2", name: "b", arguments: "{}" },
    ];
    const fresh = withUniqueCallIds(calls, new Set(["call_1"]), "span-1").map((call) => call.id);
    expect(fresh[0]).toMatch(new RegExp(`^${OWN_CALL_ID_PREFIX}`));
    expect(fresh[1]).toBe("call_2");
    // The run used Dossier's id too (the model repeated call_1 in an earlier message as well): the next is another.
    const again = withUniqueCallIds(calls, new Set(["call_1", fresh[0]!]), "span-1").map((call) => call.id);
    expect(again[0]).toMatch(new RegExp(`^${OWN_CALL_ID_PREFIX}`));
    expect(new Set(["call_1", fresh[0], ...again]).size).toBe(4);
    expect(withUniqueCallIds(calls, new Set(["call_1", fresh[0]!]), "span-1").map((call) => call.id)).toEqual(again);
  });

  it("each call's id is fixed when it first streams: the reply, in index order, stores the ids the stream showed", () => {
    const ids = new CallIds("span-1", new Set(["call_old"]));
    // The server starts the second call first, with an id the run used, and sends the first's id only after its first delta.
    const streamed = [
      ids.of(1, "call_old"),
      ids.of(0, undefined),
      ids.of(2, undefined),
      ids.of(0, "late"),
      ids.of(3, "call_\u0000x"),
      ids.of(4, "call_\u0000x"),
    ];
    expect(streamed[3]).toBe(streamed[1]);
    expect(streamed[4]).toBe("call_\u2400x");
    expect(new Set(streamed).size).toBe(5);
    const modelIds = ["late", "call_old", "", "call_\u0000x", "call_\u0000x"];
    const reply = ids.reply(
      modelIds.map((id) => ({ id, name: "n\u0000", arguments: "{}" })),
      [0, 1, 2, 3, 4],
    );
    expect(reply.map((call) => call.id)).toEqual([streamed[1], streamed[0], streamed[2], streamed[4], streamed[5]]);
    expect(reply.every((call) => call.name === "n\u2400")).toBe(true);
    // Another model call (span) gives other ids of Dossier's own.
    expect(new CallIds("span-2").of(0, "")).not.toBe(new CallIds("span-1").of(0, ""));
  });

  it("a cost confirmation's id is one the run did not use: a decision on another request never decides it", () => {
    expect(costConfirmationId("5")).toBe("cost-confirmation:5");
    expect(costConfirmationId("5", new Set(["call_1"]))).toBe("cost-confirmation:5");
    expect(costConfirmationId("5", new Set(["cost-confirmation:5", "cost-confirmation:5:2"]))).toBe("cost-confirmation:5:3");
  });
});

describe.each(backends)("two calls sharing one id under an approval policy, on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("the approval lists both calls; approving one runs that one only, and the other never runs unapproved", { timeout: 90_000 }, async () => {
    const executed: string[] = [];
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-call-ids-")),
        extraTools: [recordingTool("write_record", executed), recordingTool("write_transfer", executed)],
        leaseMs: 1_500,
        sweepMs: 100,
        approvals: { rules: { "write_*": "always", "*": "never" } },
      },
    });
    const client = t.client;
    const { run } = await admit(client, {
      question: callTools(
        { name: "write_record", arguments: { v: "rename a draft" }, id: "call_same" },
        { name: "write_transfer", arguments: { amount: 1000000 }, id: "call_same" },
      ),
    });
    const held = await waitUntil(async () => {
      const view = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return view.status === "WAITING" ? view : undefined;
    }, 20_000);
    const pending = held.pendingApprovals.edges
      .map((edge) => edge.node)
      .map((a) => ({ toolName: a.toolName, arguments: a.arguments, toolCallId: a.toolCallId }));
    expect(pending.map((a) => [a.toolName, a.arguments]).sort()).toEqual([
      ["write_record", '{"v":"rename a draft"}'],
      ["write_transfer", '{"amount":1000000}'],
    ]);
    expect(new Set(pending.map((a) => a.toolCallId)).size).toBe(2);
    const record = pending.find((a) => a.toolName === "write_record")!;
    const transfer = pending.find((a) => a.toolName === "write_transfer")!;

    const approved = await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: record.toolCallId, decision: "APPROVE" } });
    expectType(approved.decideToolCall, "DecideToolCallSuccess");
    // The other call still waits: nothing ran, the run is still WAITING.
    const still = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
    expect(still.pendingApprovals.edges.map((edge) => edge.node).map((a) => a.toolName)).toEqual(["write_transfer"]);
    expect(executed).toEqual([]);

    const rejected = await client.request(DecideToolCallDocument, {
      input: { runId: run.id, toolCallId: transfer.toolCallId, decision: "REJECT", reason: "no transfers" },
    });
    expectType(rejected.decideToolCall, "DecideToolCallSuccess");
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(['write_record {"v":"rename a draft"}']);
    expect(done.answer).toContain("write_record done");
    expect(done.answer).toContain('declined this call of "write_transfer"');
  });

  it("a call id the model repeats in a later turn of the same attempt gets Dossier's own, and each result answers its own call", {
    timeout: 90_000,
  }, async () => {
    const executed: string[] = [];
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-call-ids-")),
        extraTools: [recordingTool("write_record", executed)],
        approvals: { rules: { "*": "never" } },
      },
    });
    const { run } = await admit(t.client, {
      question: callToolsInTurns([{ name: "write_record", arguments: { v: 1 }, id: "call_1" }], [{ name: "write_record", arguments: { v: 2 }, id: "call_1" }]),
    });
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    expect(executed).toEqual(['write_record {"v":1}', 'write_record {"v":2}']);
    const messages = await t.app.db.prisma.message.findMany({ where: { runId: idOfType(run.id, "Run") }, orderBy: { seq: "asc" } });
    const calls = messages.flatMap((m) => (m.role === "ASSISTANT" ? ((m.toolCalls as { id: string }[] | null) ?? []) : []));
    expect(calls.map((call) => call.id)).toEqual(["call_1", expect.stringMatching(new RegExp(`^${OWN_CALL_ID_PREFIX}`))]);
    expect(messages.filter((m) => m.role === "TOOL").map((m) => m.toolCallId)).toEqual(calls.map((call) => call.id));
  });

  it("a 3,000-character call id is stored, held for approval and decided like any other", { timeout: 90_000 }, async () => {
    const executed: string[] = [];
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-call-ids-")),
        extraTools: [recordingTool("write_record", executed)],
        approvals: { rules: { "write_*": "always", "*": "never" } },
      },
    });
    // Random characters: an index entry cannot compress them below PostgreSQL's limit (~2,700 bytes).
    const longId = randomBytes(2_250).toString("base64url");
    const { run } = await admit(t.client, { question: callTools({ name: "write_record", arguments: { v: 1 }, id: longId }) });
    const held = await waitUntil(async () => {
      const view = expectType((await t!.client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return view.status === "WAITING" ? view : undefined;
    }, 20_000);
    expect(held.pendingApprovals.edges.map((edge) => edge.node).map((a) => a.toolCallId)).toEqual([longId]);
    const decided = await t.client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: longId, decision: "APPROVE" } });
    expectType(decided.decideToolCall, "DecideToolCallSuccess");
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(['write_record {"v":1}']);
  });
});
