// Issue 38, steering: steerRun stores a person's text at once; it enters the conversation's log
// exactly once, as a USER message right before the run's next model request (what the model
// received says so, as does the log), with a STEERED event on that turn; an input the run's end
// overtakes is RELEASED instead; an ended run refuses input; a key sent again returns the same input.
import { afterEach, describe, expect, it } from "vitest";
import { AdmitRunDocument, CancelRunDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, inputsOf, occurrences, sandbox, steer, turnsModel, workTool } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

describe.each(backends)("steering a run on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("delivers the text once, right before the next model request, and marks it on the turn", async () => {
    const gate = new Gate();
    const model = turnsModel(2);
    t = await startTestApp(backend, { runtime: { model, sandboxDir: sandbox(), extraTools: [workTool({ gate })] } });
    const { run } = await admit(t.client, { question: "Work in two turns." });
    await waitFor(() => gate.reached === 1);

    const sent = expectType(await steer(t.client, run.id, "Focus on 2025 only.", "key-1"), "SteerRunSuccess").input;
    expect(sent).toMatchObject({ text: "Focus on 2025 only.", status: "PENDING", deliveredAt: null, message: null });
    // The same key again: the same input, not a second one; with another text: a conflict.
    expect(expectType(await steer(t.client, run.id, "Focus on 2025 only.", "key-1"), "SteerRunSuccess").input.id).toBe(sent.id);
    expect(await steer(t.client, run.id, "Something else.", "key-1")).toMatchObject({ __typename: "IdempotencyConflictError" });
    // A person's text: not blank, nothing PostgreSQL cannot store.
    expect(await steer(t.client, run.id, "   ")).toMatchObject({ __typename: "ValidationError", issues: [{ field: "text" }] });
    expect(await steer(t.client, run.id, "a\u0000b")).toMatchObject({ __typename: "ValidationError" });
    gate.open();

    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    // The model's second request carried it; its first (before it was sent) did not.
    expect(model.requests.map((request) => occurrences(request.messages, "Focus on 2025 only."))).toEqual([0, 1, 1]);
    // The log: question, call, result, the input, then the reply to the request that carried it.
    const log = done.messages.edges.map((edge) => edge.node);
    expect(log.map((m) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
    const [input] = await inputsOf(t.client, run.id);
    // Its entry is the fourth of the conversation's log.
    expect(input).toMatchObject({ id: sent.id, status: "DELIVERED", message: { seq: "4" } });
    expect(input!.deliveredAt).not.toBeNull();
    expect(log[3]!.content).toBe("Focus on 2025 only.");
    // The second turn's span says so, before its model call.
    const turn2 = done.trace!.spans.find((span) => span.kind === "TURN" && span.name === "turn 2")!;
    expect(turn2.events.map((event) => event.kind)).toContain("STEERED");
    expect(turn2.events.find((event) => event.kind === "STEERED")!.preview).toBe("Focus on 2025 only.");

    // The run has ended: no more input, nothing stored.
    const ended = await steer(t.client, run.id, "Too late.");
    expect(ended).toMatchObject({ __typename: "RunEndedError", run: { id: run.id, status: "SUCCEEDED" } });
    expect(await inputsOf(t.client, run.id)).toHaveLength(1);
  });

  it("releases what the run's end overtook, and delivers a queued run's input at its first request", async () => {
    const gate = new Gate();
    const model = turnsModel(1);
    t = await startTestApp(backend, { runtime: { model, sandboxDir: sandbox(), extraTools: [workTool({ gate })] } });
    const { run } = await admit(t.client, { question: "Hold on." });
    await waitFor(() => gate.reached === 1);
    const queued = expectType(
      (await t.client.request(AdmitRunDocument, { input: { question: "Next.", conversationId: run.conversation.id, multitask: "ENQUEUE" } })).admitRun,
      "AdmitRunSuccess",
    ).run;
    const overtaken = expectType(await steer(t.client, run.id, "Never mind the details."), "SteerRunSuccess").input;
    const early = expectType(await steer(t.client, queued.id, "Answer in one word."), "SteerRunSuccess").input;
    expect(expectType((await t.client.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
    const [released] = await inputsOf(t.client, run.id);
    expect(released).toMatchObject({ id: overtaken.id, status: "RELEASED", message: null, deliveredAt: null });
    expect(released!.releasedAt).not.toBeNull();

    gate.open();
    expect((await settled(t.client, queued.id)).status).toBe("SUCCEEDED");
    // The queued run's first request carried its question and the input; the cancelled run's input is nowhere.
    const first = model.requests.find((request) => occurrences(request.messages, "Next.") > 0)!;
    expect(occurrences(first.messages, "Answer in one word.")).toBe(1);
    expect(model.requests.every((request) => occurrences(request.messages, "Never mind the details.") === 0)).toBe(true);
    expect(await inputsOf(t.client, queued.id)).toMatchObject([{ id: early.id, status: "DELIVERED" }]);
  });
});
