// Issue 38: a steering input stored after an attempt claimed its run, before the attempt's first
// model request, is in that request — the attempt read the run's requests with its claim, and hears
// of the input announced. A run that answers in that one request delivers the input (DELIVERED, in
// the log right before the answer) rather than releasing it. The input may be stored on another
// instance than the one executing the run: the announcement crosses the shared event bus (Redis).
import { afterEach, describe, expect, inject, it } from "vitest";
import { idOfType } from "../../src/graphql/global-id.js";
import { openDatabase } from "../../src/db/open-database.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import { createEventBus, type EventBus } from "../../src/events/topics.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, heldAtStart, inputsOf, occurrences, sandbox, steer } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const STEERING = "[only the 2025 figures]";

const answersAtOnce = () => new ScriptedModel({ name: "answers-at-once", steps: () => ({ content: "The answer." }) });

/**
 * Resolves once the event bus carried a steering announcement for the run (the worker listening on
 * it heard it too), or after 5 s when none comes: the attempt then goes on regardless.
 */
function announced(events: EventBus, runId: string): Promise<void> {
  const changes = events.subscribe("run:changes");
  const heard = (async () => {
    for await (const change of changes) if (change.runId === runId && change.steered) return;
  })();
  return withTimeout(heard, 5_000).catch(() => void changes.return?.());
}

/** Steers the run held before its first request on `steering`, releases it, and checks that its one request delivered the input. */
async function expectDeliveredInFirstRequest(worker: TestApp, steering: TestApp, events: EventBus, model: ScriptedModel, start: Gate) {
  const { run } = await admit(worker.client, { question: "Answer in one request." });
  // The attempt has claimed the run and read its requests (no input waited then); it is held before its first model request.
  await waitFor(() => start.reached === 1, 10_000);
  const heard = announced(events, idOfType(run.id, "Run")!);
  const sent = expectType(await steer(steering.client, run.id, STEERING), "SteerRunSuccess").input;
  await heard;
  start.open();

  const done = await settled(worker.client, run.id);
  expect(done.status).toBe("SUCCEEDED");
  // One request, and it carried the input.
  expect(model.requests.map((request) => occurrences(request.messages, STEERING))).toEqual([1]);
  const log = done.messages.edges.map((edge) => edge.node);
  expect(log.map((m) => [m.role, m.content])).toEqual([
    ["USER", "Answer in one request."],
    ["USER", STEERING],
    ["ASSISTANT", "The answer."],
  ]);
  expect(await inputsOf(steering.client, run.id)).toMatchObject([{ id: sent.id, status: "DELIVERED", releasedAt: null, message: { seq: log[1]!.seq } }]);
  const turn = done.trace!.spans.find((span) => span.kind === "TURN" && span.name === "turn 1")!;
  expect(turn.events.filter((event) => event.kind === "STEERED").map((event) => event.preview)).toEqual([STEERING]);
}

describe.each(backends)("steering stored between an attempt's claim and its first model request on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("is in the first request, and the run answering in it leaves the input DELIVERED, not RELEASED", async () => {
    const start = new Gate();
    const model = answersAtOnce();
    const events = createEventBus();
    t = await startTestApp(backend, { events, runtime: { model, sandboxDir: sandbox(), extraHooks: [heldAtStart(start)] } });
    await expectDeliveredInFirstRequest(t, t, events, model, start);
  });
});

describe.runIf(backends.includes("postgres") && redisUrl)("steering stored on another instance than the run's", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("is in the first request of the attempt executing the run on the other instance, and ends DELIVERED", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    // Two instances of one deployment: one database, one Redis (under a prefix of their own).
    const prefix = `test-steer-${process.pid}-${Date.now()}:`;
    const buses = await Promise.all([createRedisEventBus(redisUrl!, prefix), createRedisEventBus(redisUrl!, prefix)]);
    cleanups.push(() => Promise.all(buses.map((bus) => bus.close())).then(() => undefined));
    const open = async () => {
      const db = await openDatabase({ kind: "postgres", url: database.url });
      return { db, dispose: () => db.close() };
    };
    const start = new Gate();
    const model = answersAtOnce();
    const runtime = { model, sandboxDir: sandbox(), extraHooks: [heldAtStart(start)] };
    const worker = await startTestApp("postgres", { database: open, events: buses[0]!.events, runtime });
    cleanups.push(() => worker.close());
    // The other instance executes no run: it only stores the input.
    const api = await startTestApp("postgres", { database: open, events: buses[1]!.events });
    cleanups.push(() => api.close());
    await expectDeliveredInFirstRequest(worker, api, buses[0]!.events, model, start);
  }, 60_000);
});
