// Tool calls held for a decision and the stops that end a run with what it has, on every backend:
// a CONCLUDE or AFTER_TURN stop taken before the held calls resume executes none of them, even
// one a person approved. Each is answered for the model with "[not executed: the run was stopped
// (<mode>) before this call ran]" in the log (a rejected one keeps the person's reason), then
// CONCLUDE makes its one last request without tools and AFTER_TURN ends the run before any request.
// A NOW stop ends the run at once, as before. Two calls are held: `send_payment` (id a) and
// `delete_data` (id b); one worker slot, so a second run can hold the worker while the calls are decided.
import { afterEach, describe, expect, it } from "vitest";
import { type CancelMode, CancelRunDocument, DecideToolCallDocument } from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { RunHooks } from "../../src/runtime/loop/attempt.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { type RunView, settled } from "../support/scripted-runs.js";
import { Gate, sandbox, workTool } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, waitUntil } from "../support/wait.js";

const CONCLUSION = "Best answer from the evidence so far.";
const stoppedResult = (mode: string) => `[not executed: the run was stopped (${mode}) before this call ran]`;
/** The result of the rejected `delete_data` call ("[not executed: the person …", first in sorted order). */
const declined = (reason: string) => expect.stringContaining(`declined this call of "delete_data". Reason: ${reason}.`);

describe.each(backends)("held calls and stops on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const executed: string[] = [];
  const recording = (name: string): Tool => ({
    schema: { name, description: name, parameters: { type: "object", properties: {} } },
    async execute() {
      executed.push(name);
      return `${name} ran`;
    },
  });
  const isHeldRun = (text: string | null | undefined) => Boolean(text?.includes("Pay and delete"));
  // The held run asks for both calls, then answers; the other run calls `work` once; without tools, the conclusion.
  const model = () =>
    new ScriptedModel({
      name: "held-calls",
      steps: (request) => {
        if (request.tools.length === 0) return { content: CONCLUSION };
        if (request.messages.some((m) => m.role === "tool")) return { content: "done" };
        if (!request.messages.some((m) => m.role === "user" && isHeldRun(m.content))) return { toolCalls: [{ name: "work", arguments: {} }] };
        return {
          toolCalls: [
            { name: "send_payment", arguments: {}, id: "a" },
            { name: "delete_data", arguments: {}, id: "b" },
          ],
        };
      },
    });

  async function heldRun({ gate = new Gate(), hooks = [] }: { gate?: Gate; hooks?: RunHooks[] } = {}) {
    executed.length = 0;
    const scripted = model();
    t = await startTestApp(backend, {
      runtime: {
        model: scripted,
        sandboxDir: sandbox(),
        extraTools: [recording("send_payment"), recording("delete_data"), workTool({ gate })],
        extraHooks: hooks,
        concurrency: 1,
        leaseMs: 10_000,
        approvals: { rules: { send_payment: "always", delete_data: "always" } },
      },
    });
    const { run } = await admit(t.client, { question: "Pay and delete." });
    await waitUntil(async () => ((await t!.client.runTrace(run.id))!.status === "WAITING" ? true : undefined), 20_000);
    const heldRequests = () => scripted.requests.filter((r) => r.messages.some((m) => m.role === "user" && isHeldRun(m.content)));
    return { runId: run.id, heldRequests };
  }

  const decide = async (runId: string, toolCallId: string, decision: "APPROVE" | "REJECT", reason?: string) =>
    expectType((await t!.client.request(DecideToolCallDocument, { input: { runId, toolCallId, decision, reason } })).decideToolCall, "DecideToolCallSuccess");
  const cancel = async (runId: string, mode: CancelMode) =>
    expectType((await t!.client.request(CancelRunDocument, { input: { runId, mode } })).cancelRun, "CancelRunSuccess").run;
  /** The run's TOOL results, sorted. */
  const toolResults = (run: RunView) =>
    run.messages.edges
      .filter((e) => e.node.role === "TOOL")
      .map((e) => e.node.content)
      .sort();

  it("CONCLUDE on a waiting run with one call approved: the approved call never executes, the run concludes from the log saying so", async () => {
    const { runId, heldRequests } = await heldRun();
    await decide(runId, "a", "APPROVE");
    await cancel(runId, "CONCLUDE");
    const done = await settled(t!.client, runId);
    expect(executed).toEqual([]);
    expect(done).toMatchObject({ status: "SUCCEEDED", stopReason: "CONCLUDED", concludedEarly: true, answer: CONCLUSION });
    // The open call was rejected by the stop; the approved one is answered as not executed.
    expect(toolResults(done)).toEqual([declined("the run was asked to conclude"), stoppedResult("CONCLUDE")]);
    // One last request without tools, which saw the approved call's result.
    const requests = heldRequests();
    expect(requests.map((r) => r.tools.length > 0)).toEqual([true, false]);
    expect(requests[1]!.messages.filter((m) => m.role === "tool").map((m) => m.content)).toContain(stoppedResult("CONCLUDE"));
  });

  it("CONCLUDE heard while the resuming attempt starts, after it read the run's requests: neither approved call executes", async () => {
    // The attempt that resumes the calls waits, once it has read the run's requests, until it hears the stop.
    const resuming = { armed: false, reached: false };
    const hold: RunHooks = {
      beforeFirstTurn: (start) => async () => {
        if (!resuming.armed) return;
        resuming.armed = false;
        resuming.reached = true;
        if (!start.signal.aborted) await new Promise((resolve) => start.signal.addEventListener("abort", resolve, { once: true }));
      },
    };
    const { runId, heldRequests } = await heldRun({ hooks: [hold] });
    resuming.armed = true;
    await decide(runId, "a", "APPROVE");
    await decide(runId, "b", "APPROVE");
    await waitFor(() => resuming.reached, 20_000);
    await cancel(runId, "CONCLUDE");
    const done = await settled(t!.client, runId);
    expect(executed).toEqual([]);
    expect(done).toMatchObject({ status: "SUCCEEDED", stopReason: "CONCLUDED", concludedEarly: true, answer: CONCLUSION });
    expect(toolResults(done)).toEqual([stoppedResult("CONCLUDE"), stoppedResult("CONCLUDE")]);
    expect(heldRequests().map((r) => r.tools.length > 0)).toEqual([true, false]);
  });

  /** Both calls decided while the only worker slot is busy with another run; then the stop; then the worker is let go. */
  async function decidedThenStopped(mode: CancelMode) {
    const gate = new Gate();
    const held = await heldRun({ gate });
    const { run: other } = await admit(t!.client, { question: "Work a while." });
    await waitFor(() => gate.reached === 1, 20_000);
    await decide(held.runId, "a", "APPROVE");
    await decide(held.runId, "b", "REJECT", "not today");
    const stopped = await cancel(held.runId, mode);
    gate.open();
    expect((await settled(t!.client, other.id)).status).toBe("SUCCEEDED");
    return { ...held, stopped, done: await settled(t!.client, held.runId) };
  }

  it("CONCLUDE after the calls were decided, before the run resumed: the approved call never executes, the rejected one keeps its reason", async () => {
    const { done, heldRequests } = await decidedThenStopped("CONCLUDE");
    expect(executed).toEqual([]);
    expect(done).toMatchObject({ status: "SUCCEEDED", stopReason: "CONCLUDED", concludedEarly: true, answer: CONCLUSION });
    expect(toolResults(done)).toEqual([declined("not today"), stoppedResult("CONCLUDE")]);
    expect(heldRequests().map((r) => r.tools.length > 0)).toEqual([true, false]);
  });

  it("AFTER_TURN after the calls were decided, before the run resumed: no call executes and the model is asked nothing more", async () => {
    const { done, heldRequests } = await decidedThenStopped("AFTER_TURN");
    expect(executed).toEqual([]);
    expect(done).toMatchObject({ status: "CANCELLED", stopReason: "STOPPED_AFTER_TURN", concludedEarly: false });
    expect(toolResults(done)).toEqual([declined("not today"), stoppedResult("AFTER_TURN")]);
    expect(heldRequests()).toHaveLength(1);
  });

  it("NOW after the calls were decided ends the run at once: nothing executes, nothing more is logged or asked", async () => {
    const { done, stopped, heldRequests } = await decidedThenStopped("NOW");
    expect(stopped.status).toBe("CANCELLED");
    expect(executed).toEqual([]);
    expect(done).toMatchObject({ status: "CANCELLED", stopReason: "CANCELLED" });
    expect(toolResults(done)).toEqual([]);
    expect(heldRequests()).toHaveLength(1);
  });
});
