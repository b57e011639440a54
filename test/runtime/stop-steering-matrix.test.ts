// Every stop mode (NOW, AFTER_TURN, CONCLUDE) of a queued, running, paused and waiting run that a
// person has steered: once the run has settled no input is left PENDING. An input enters the log
// only if a model request followed it, and then that request carried it once — the CONCLUDE
// stop's last request delivers it; a run ended without another request RELEASED it.
import { afterAll, describe, expect, it } from "vitest";
import { AdmitRunDocument, type CancelMode, CancelRunDocument, PauseRunDocument, ResumeRunDocument } from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, inputsOf, occurrences, sandbox, steer, workTool } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, waitUntil } from "../support/wait.js";

const STEERING = "[steered before the stop]";
const CONCLUSION = "Best answer from the evidence so far.";

/** One `work` call, then an answer; the concluding request (no tools) is answered with CONCLUSION. */
const oneCallModel = () =>
  new ScriptedModel({
    name: "one-call",
    steps: (request) =>
      request.tools.length === 0
        ? { content: CONCLUSION }
        : request.messages.some((m) => m.role === "tool")
          ? { content: "done" }
          : { toolCalls: [{ name: "work", arguments: {} }] },
  });

type Status = "QUEUED" | "RUNNING" | "PAUSED" | "WAITING";
const cases = (["QUEUED", "RUNNING", "PAUSED", "WAITING"] as const).flatMap((status) =>
  (["NOW", "AFTER_TURN", "CONCLUDE"] as const).map((mode) => ({ status, mode })),
);

describe.each(backends)("steered runs stopped on %s", (backend) => {
  // Two apps serve the file's tests, one holding `work` for approval (WAITING) and one not; each
  // test's run answers through its own model and works through its own tool, as a principal of its own.
  const apps = new Map<boolean, Promise<TestApp>>();
  afterAll(async () => {
    for (const app of apps.values()) await (await app).close();
    apps.clear();
  });
  let client: TestApp["client"];
  let model = oneCallModel();
  let tool = workTool();
  const appModel: ModelPort = {
    label: model.label,
    model: model.model,
    scripted: true,
    contextWindow: model.contextWindow,
    complete: (request, onEvent) => model.complete(request, onEvent),
  };
  const appTool: Tool = { schema: tool.schema, execute: (args, context) => tool.execute(args, context) };
  const appFor = (approvals: boolean) => {
    if (!apps.has(approvals))
      apps.set(
        approvals,
        startTestApp(backend, {
          runtime: { model: appModel, sandboxDir: sandbox(), extraTools: [appTool], ...(approvals && { approvals: { rules: { work: "always" } } }) },
        }),
      );
    return apps.get(approvals)!;
  };

  const statusOf = async (runId: string) => (await client.runTrace(runId))!.status;

  /** A run in `status`, steered; returns it and what lets it go on once stopped. */
  async function steeredRun(status: Status, runModel: ScriptedModel): Promise<{ runId: string; goOn: () => Promise<void> }> {
    const gate = new Gate();
    model = runModel;
    tool = workTool({ gate });
    const t = await appFor(status === "WAITING");
    client = t.as(await t.createPrincipal(`steering ${status}`));
    const { run } = await admit(client, { question: `Work, then answer (${status}).` });
    let runId = run.id;
    let goOn = async () => gate.open();
    if (status === "QUEUED") {
      await waitFor(() => gate.reached === 1);
      const admitted = (await client.request(AdmitRunDocument, { input: { question: "Next.", conversationId: run.conversation.id, multitask: "ENQUEUE" } }))
        .admitRun;
      runId = expectType(admitted, "AdmitRunSuccess").run.id;
      // The run ahead of it goes, and the queued one is claimed (if it is still to run).
      goOn = async () => {
        await client.request(CancelRunDocument, { input: { runId: run.id } });
        gate.open();
      };
    } else if (status === "RUNNING") {
      await waitFor(() => gate.reached === 1);
    } else if (status === "PAUSED") {
      await waitFor(() => gate.reached === 1);
      expectType((await client.request(PauseRunDocument, { input: { runId } })).pauseRun, "PauseRunSuccess");
      gate.open();
      goOn = async () => {
        if ((await statusOf(runId)) === "PAUSED") expectType((await client.request(ResumeRunDocument, { input: { runId } })).resumeRun, "ResumeRunSuccess");
      };
    }
    await waitUntil(async () => ((await statusOf(runId)) === status ? true : undefined), 20_000);
    expectType(await steer(client, runId, STEERING), "SteerRunSuccess");
    return { runId, goOn };
  }

  it.each(cases)("a $status run stopped $mode leaves no input PENDING", async ({ status, mode }) => {
    const model = oneCallModel();
    const { runId, goOn } = await steeredRun(status, model);
    const stopped = expectType((await client.request(CancelRunDocument, { input: { runId, mode: mode as CancelMode } })).cancelRun, "CancelRunSuccess").run;
    expect(stopped.stopRequest?.mode).toBe(mode);
    await goOn();
    const done = await settled(client, runId);
    const inputs = await inputsOf(client, runId);
    const carried = model.requests.map((request) => occurrences(request.messages, STEERING));
    if (mode === "CONCLUDE") {
      // The concluding request, the run's last, carried it once: in the log right before the answer.
      expect(done).toMatchObject({ status: "SUCCEEDED", concludedEarly: true, answer: CONCLUSION });
      expect(inputs).toMatchObject([{ status: "DELIVERED" }]);
      expect(carried.filter((n) => n > 0)).toEqual([1]);
      expect(carried.at(-1)).toBe(1);
      expect(model.requests.at(-1)!.tools).toEqual([]);
    } else {
      expect(done.status).toBe("CANCELLED");
      expect(inputs).toMatchObject([{ status: "RELEASED", message: null }]);
      expect(carried.every((n) => n === 0)).toBe(true);
    }
  });
});
