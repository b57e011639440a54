// Issue 38, "how it is checked": steerRun raced against a run's turns, and across a takeover.
// Whatever the interleaving, each accepted input is either in the log exactly once — right before
// the model request that first carried it, which the model received exactly once — or RELEASED,
// in neither the log nor any request; never both, never lost. An attempt fenced out of its run
// delivers nothing; the attempt that takes over delivers what was accepted around the takeover.
import { afterEach, describe, expect, it } from "vitest";
import { idOfType } from "../../src/graphql/global-id.js";
import type { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, inputsOf, occurrences, sandbox, steer, turnsModel, workTool } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

type Input = Awaited<ReturnType<typeof inputsOf>>[number];

/** Checks every input of the run against its log and the model's requests; returns how many were delivered and released. */
async function expectExactlyOnce(t: TestApp, model: ScriptedModel, runId: string, accepted: readonly string[]) {
  const inputs = await inputsOf(t.client, runId);
  expect(inputs.map((input) => input.id).sort()).toEqual([...accepted].sort());
  const log = await t.app.db.prisma.message.findMany({ where: { runId: idOfType(runId, "Run")! }, orderBy: { seq: "asc" } });
  const counts = { DELIVERED: 0, RELEASED: 0 };
  for (const input of inputs) {
    expect(["DELIVERED", "RELEASED"]).toContain(input.status);
    counts[input.status as keyof typeof counts] += 1;
    const entries = log.filter((entry) => entry.content.includes(input.text));
    const carried = model.requests.map((request) => occurrences(request.messages, input.text));
    if (input.status === "RELEASED") {
      expect({ text: input.text, entries, carried: carried.filter((n) => n > 0) }).toEqual({ text: input.text, entries: [], carried: [] });
      continue;
    }
    expectDelivered(input, entries, log, carried);
  }
  return counts;
}

function expectDelivered(input: Input, entries: { seq: number; role: string }[], log: { seq: number; role: string }[], carried: number[]) {
  // One USER entry, the input's own; after it only other inputs until the reply to the request that carried it.
  expect(entries.map((entry) => [entry.role, String(entry.seq)])).toEqual([["USER", input.message!.seq]]);
  const at = log.findIndex((entry) => entry.seq === entries[0]!.seq);
  const next = log.slice(at + 1).find((entry) => entry.role !== "USER");
  expect(next?.role).toBe("ASSISTANT");
  // That request is the first that carried it — once — and every later one carries it once too.
  const first = log.slice(0, at).filter((entry) => entry.role === "ASSISTANT").length;
  expect(carried.slice(0, first).every((n) => n === 0)).toBe(true);
  expect(carried.slice(first)).toEqual(carried.slice(first).map(() => 1));
  expect(carried.length).toBeGreaterThan(first);
}

describe.runIf(backends.includes("postgres"))("steering raced against a run's turns on postgres", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("50 concurrent steerRun calls: each input delivered exactly once before a model request, or released", async () => {
    // The last request (the answer) takes a while: inputs sent meanwhile are overtaken by the run's end.
    const model = turnsModel(6, { answerDelayMs: 400 });
    t = await startTestApp("postgres", { runtime: { model, sandboxDir: sandbox(), extraTools: [workTool({ ms: 15 })] } });
    const { run } = await admit(t.client, { question: "Work in six turns." });
    const texts = Array.from({ length: 50 }, (_, i) => `[steer ${String(i).padStart(2, "0")}]`);
    // Five waves of ten, sent as the model receives its 1st, 2nd, 3rd, 5th and 7th (last) request;
    // the calls of a wave run concurrently with each other and with the run's turns.
    const waves = [1, 2, 3, 5, 7];
    const answers = await Promise.all(
      texts.map(async (text, i) => {
        const wave = waves[Math.floor(i / 10)]!;
        await waitFor(() => model.requests.length >= wave, 30_000);
        await new Promise((resolve) => setTimeout(resolve, i % 10));
        return steer(t!.client, run.id, text, `k-${i}`);
      }),
    );
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    const accepted = answers.flatMap((answer) => (answer.__typename === "SteerRunSuccess" ? [answer.input.id] : []));
    // Refused only because the run had ended: nothing else fails.
    expect(answers.filter((answer) => answer.__typename !== "SteerRunSuccess").map((answer) => answer.__typename)).toEqual(
      Array(50 - accepted.length).fill("RunEndedError"),
    );
    const counts = await expectExactlyOnce(t, model, run.id, accepted);
    console.info(`50 raced steers: ${counts.DELIVERED} delivered, ${counts.RELEASED} released, ${50 - accepted.length} refused after the end`);
    expect(counts.DELIVERED).toBeGreaterThan(0);
    expect(counts.RELEASED + 50 - accepted.length).toBeGreaterThan(0);
  }, 60_000);
});

describe.each(backends)("steering across a takeover on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("an attempt fenced out mid-run delivers nothing; the one that takes over delivers every input once", async () => {
    const gate = new Gate();
    const model = turnsModel(2);
    t = await startTestApp(backend, { runtime: { model, sandboxDir: sandbox(), extraTools: [workTool({ gate })], leaseMs: 1_500, concurrency: 2 } });
    const { run } = await admit(t.client, { question: "Survive a takeover." });
    const runId = idOfType(run.id, "Run")!;
    await waitFor(() => gate.reached === 1);
    const before = await steer(t.client, run.id, "[before the takeover]");
    // The attempt loses its run: another owner holds it, under a lease long expired (its instance is gone).
    await t.app.db.prisma.$executeRawUnsafe("UPDATE run SET lease_owner = 'gone-instance', lease_expires_at = now() - interval '1 hour' WHERE id = $1", runId);
    const around = await steer(t.client, run.id, "[around the takeover]");
    // The fenced attempt's call returns now: its result, and anything after it, is refused.
    gate.open();
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.attempts.length).toBeGreaterThanOrEqual(2);
    expect(done.attempts.at(-1)!.outcome).toBe("COMPLETED");
    const accepted = [before, around].map((answer) => (answer.__typename === "SteerRunSuccess" ? answer.input.id : answer.__typename));
    const counts = await expectExactlyOnce(t, model, run.id, accepted);
    expect(counts).toEqual({ DELIVERED: 2, RELEASED: 0 });
    // Only the attempt that took over made a request after the first: both inputs in one request.
    expect(
      model.requests.map((request) => occurrences(request.messages, "[before the takeover]") + occurrences(request.messages, "[around the takeover]")),
    ).toEqual([0, 2, 2]);
    // Nothing of the fenced attempt's turn after its call: its result was never logged.
    const roles = (await t.app.db.prisma.message.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { role: true } })).map((m) => m.role);
    expect(roles.slice(0, 5)).toEqual(["USER", "ASSISTANT", "REPAIR", "USER", "USER"]);
  }, 60_000);
});
