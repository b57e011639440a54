// Stop modes (cancelRun) meeting steering (steerRun) and the start of an attempt, on every backend.
// A CONCLUDE stop's one last request is the run's next model request: a steering input pending
// when it is made enters the log right before it (DELIVERED, a STEERED event on the conclude turn)
// and the model reads it — for a running run and for a queued one that makes only that request.
// An AFTER_TURN stop asked after an attempt claimed the run but before its first model request
// ends the run CANCELLED (STOPPED_AFTER_TURN) with no model request at all, its pending input RELEASED.
import { afterEach, describe, expect, it } from "vitest";
import { AdmitRunDocument, type CancelMode, CancelRunDocument } from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, heldAtStart, inputsOf, occurrences, sandbox, steer, workTool } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

const CONCLUSION = "Best answer from the evidence so far.";

/** Calls `work` while tools are offered; the concluding request (no tools) is answered with CONCLUSION. */
const workingModel = () =>
  new ScriptedModel({
    name: "stop-steering",
    steps: (request) => (request.tools?.length ? { toolCalls: [{ name: "work", arguments: {} }] } : { content: CONCLUSION }),
  });

describe.each(backends)("stop modes meeting steering and an attempt's start on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const cancel = async (runId: string, mode: CancelMode) =>
    expectType((await t!.client.request(CancelRunDocument, { input: { runId, mode } })).cancelRun, "CancelRunSuccess").run;

  it("CONCLUDE delivers the input pending when it is taken right before its one last request, which the model reads", async () => {
    const gate = new Gate();
    const model = workingModel();
    t = await startTestApp(backend, { runtime: { model, sandboxDir: sandbox(), extraTools: [workTool({ gate })] } });
    const { run } = await admit(t.client, { question: "Work until told to conclude." });
    await waitFor(() => gate.reached === 1);
    const sent = expectType(await steer(t.client, run.id, "[consider the 2025 figures]"), "SteerRunSuccess").input;
    expect((await cancel(run.id, "CONCLUDE")).stopRequest).toMatchObject({ mode: "CONCLUDE" });

    const done = await settled(t.client, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", stopReason: "CONCLUDED", concludedEarly: true, answer: CONCLUSION });
    // Two requests: the turn the stop cut short, and the concluding one (no tools), which carried the input once.
    expect(model.requests.map((request) => [request.tools.length > 0, occurrences(request.messages, "[consider the 2025 figures]")])).toEqual([
      [true, 0],
      [false, 1],
    ]);
    // In the log right before the concluding reply, marked DELIVERED with its entry.
    const log = done.messages.edges.map((edge) => edge.node);
    expect(log.slice(-2).map((m) => [m.role, m.content])).toEqual([
      ["USER", "[consider the 2025 figures]"],
      ["ASSISTANT", CONCLUSION],
    ]);
    expect(await inputsOf(t.client, run.id)).toMatchObject([{ id: sent.id, status: "DELIVERED", releasedAt: null, message: { seq: log.at(-2)!.seq } }]);
    // The conclude turn's span says so.
    const turn = done.trace!.spans.find((span) => span.kind === "TURN" && span.name.endsWith("(conclude)"))!;
    expect(turn.events.filter((event) => event.kind === "STEERED").map((event) => event.preview)).toEqual(["[consider the 2025 figures]"]);
  });

  it("a queued run asked to CONCLUDE makes only the concluding request, carrying the input sent while it waited", async () => {
    const gate = new Gate();
    const model = workingModel();
    t = await startTestApp(backend, { runtime: { model, sandboxDir: sandbox(), extraTools: [workTool({ gate })] } });
    const { run: first } = await admit(t.client, { question: "Hold the conversation." });
    await waitFor(() => gate.reached === 1);
    const queued = expectType(
      (await t.client.request(AdmitRunDocument, { input: { question: "Next.", conversationId: first.conversation.id, multitask: "ENQUEUE" } })).admitRun,
      "AdmitRunSuccess",
    ).run;
    const sent = expectType(await steer(t.client, queued.id, "[only the headline number]"), "SteerRunSuccess").input;
    expect(await cancel(queued.id, "CONCLUDE")).toMatchObject({ status: "QUEUED", stopRequest: { mode: "CONCLUDE" } });
    expect((await cancel(first.id, "NOW")).status).toBe("CANCELLED");

    const done = await settled(t.client, queued.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", concludedEarly: true, answer: CONCLUSION });
    const made = model.requests.filter((request) => occurrences(request.messages, "Next.") > 0);
    expect(made.map((request) => [request.tools.length > 0, occurrences(request.messages, "[only the headline number]")])).toEqual([[false, 1]]);
    expect(await inputsOf(t.client, queued.id)).toMatchObject([{ id: sent.id, status: "DELIVERED" }]);
  });

  it("AFTER_TURN asked between an attempt's claim and its first model request ends the run before any request, its input released", async () => {
    const start = new Gate();
    const model = new ScriptedModel({ name: "answers-at-once", steps: () => ({ content: "An answer nobody asked for any more." }) });
    t = await startTestApp(backend, { runtime: { model, sandboxDir: sandbox(), extraHooks: [heldAtStart(start)] } });
    const { run } = await admit(t.client, { question: "Answer at once." });
    // The attempt has claimed the run and is reading what its first turn needs.
    await waitFor(() => start.reached === 1);
    const sent = expectType(await steer(t.client, run.id, "[shorter, please]"), "SteerRunSuccess").input;
    const stop = await cancel(run.id, "AFTER_TURN");
    // Claimed: the stop waits for the attempt, which has made no model request yet.
    expect(stop).toMatchObject({ status: "RUNNING", stopRequest: { mode: "AFTER_TURN" } });
    start.open();

    const done = await settled(t.client, run.id);
    expect(done).toMatchObject({ status: "CANCELLED", stopReason: "STOPPED_AFTER_TURN", answer: null, stopRequest: { mode: "AFTER_TURN" } });
    expect(model.requests).toHaveLength(0);
    expect(done.messages.edges.map((edge) => edge.node.role)).toEqual(["USER"]);
    expect(await inputsOf(t.client, run.id)).toMatchObject([{ id: sent.id, status: "RELEASED", message: null }]);
    expect(done.trace!.spans.filter((span) => span.endedAt === null)).toEqual([]);
  });
});
