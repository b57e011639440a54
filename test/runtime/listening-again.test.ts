// A worker's subscriptions to the event bus that fail (the event target's iterator throws, as a
// link to Redis that gave up would) are made again: the process keeps serving after an unhandled
// rejection, so a listening loop that ended would leave a worker that never hears a cancellation,
// a stop or a steering input announced, and — without a run queue — never wakes for a queued run
// before its next sweep.
import { afterEach, describe, expect, it } from "vitest";
import { CancelRunDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { createEventBus, type EventBus, type Topics } from "../../src/events/topics.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, heldAtStart, inputsOf, occurrences, sandbox, steer, turnsModel } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, withTimeout } from "../support/wait.js";

const STEERING = "[only the 2025 figures]";
/** Long enough that no lease renewal nor sweep comes during a test: only what the bus carries does. */
const QUIET = { leaseMs: 120_000, sweepMs: 600_000 };

/**
 * The app's event bus, whose first subscription to each of `topics` fails on `fail()`: its
 * iterator throws, as a subscription whose link was lost would. Later subscriptions are sound.
 */
function failingBus(topics: (keyof Topics)[]) {
  const bus = createEventBus();
  const made = new Map<string, number>();
  const failures: ((error: Error) => void)[] = [];
  const subscribe = (topic: keyof Topics, ...rest: unknown[]): AsyncIterable<unknown> => {
    made.set(topic, (made.get(topic) ?? 0) + 1);
    const sound = (bus.subscribe as unknown as (...args: unknown[]) => AsyncIterable<unknown>)(topic, ...rest);
    if (!topics.includes(topic) || made.get(topic)! > 1) return sound;
    const iterator = sound[Symbol.asyncIterator]();
    let failing: (error: Error) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => (failing = reject));
    failed.catch(() => undefined);
    failures.push((error) => {
      failing(error);
      void iterator.return?.();
    });
    const failingOnce: AsyncIterableIterator<unknown> = {
      [Symbol.asyncIterator]: () => failingOnce,
      next: () => Promise.race([iterator.next(), failed]),
      return: () => iterator.return!(),
    };
    return failingOnce;
  };
  const events = { publish: bus.publish.bind(bus), subscribe } as unknown as EventBus;
  return {
    events,
    fail: () => failures.splice(0).forEach((failing) => failing(new Error("the link to the event bus was lost"))),
    /** How many subscriptions to `topic` were made. */
    made: (topic: keyof Topics) => made.get(topic) ?? 0,
  };
}

/** Resolves once the bus carried a steering announcement for the run (the worker listening on it heard it too). */
function announced(events: EventBus, runId: string): Promise<void> {
  const changes = events.subscribe("run:changes");
  const heard = (async () => {
    for await (const change of changes) if (change.runId === idOfType(runId, "Run") && change.steered) return;
  })();
  return withTimeout(heard, 5_000).finally(() => void changes.return?.());
}

describe("a worker whose subscriptions to the event bus failed", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("wakes for a run queued afterwards, and the run's first request carries a steering input stored after its claim", async () => {
    const link = failingBus(["run:changes", "run:queued"]);
    const start = new Gate();
    const model = new ScriptedModel({ name: "answers-at-once", steps: () => ({ content: "The answer." }) });
    t = await startTestApp("pglite", { events: link.events, runtime: { model, sandboxDir: sandbox(), extraHooks: [heldAtStart(start)], ...QUIET } });
    await waitFor(() => link.made("run:changes") === 1 && link.made("run:queued") === 1);
    link.fail();
    // The fixed worker listens again after a moment; one that does not is seen below, by what its run did.
    await waitFor(() => link.made("run:changes") === 2 && link.made("run:queued") === 2, 5_000).catch(() => undefined);

    // Announced on run:queued only: no sweep comes while the test runs.
    const { run } = await admit(t.client, { question: "Answer in one request." });
    await waitFor(() => start.reached === 1, 10_000);
    const heard = announced(link.events, run.id);
    const sent = expectType(await steer(t.client, run.id, STEERING), "SteerRunSuccess").input;
    await heard;
    start.open();

    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(model.requests.map((request) => occurrences(request.messages, STEERING))).toEqual([1]);
    expect(done.messages.edges.map((edge) => [edge.node.role, edge.node.content])).toEqual([
      ["USER", "Answer in one request."],
      ["USER", STEERING],
      ["ASSISTANT", "The answer."],
    ]);
    expect(await inputsOf(t.client, run.id)).toMatchObject([{ id: sent.id, status: "DELIVERED" }]);
  }, 30_000);

  it("stops a run's tool at once when the run is cancelled", async () => {
    const link = failingBus(["run:changes"]);
    const stopped: unknown[] = [];
    const started = new Gate();
    const work: Tool = {
      schema: { name: "work", description: "does some work", parameters: { type: "object", properties: {} } },
      execute: (_args, { signal }) =>
        new Promise<string>((_, reject) => {
          started.reached += 1;
          signal.addEventListener("abort", () => (stopped.push(signal.reason), reject(signal.reason)), { once: true });
        }),
    };
    t = await startTestApp("pglite", { events: link.events, runtime: { model: turnsModel(1), sandboxDir: sandbox(), extraTools: [work], ...QUIET } });
    const { run } = await admit(t.client, { question: "Work until cancelled." });
    await waitFor(() => started.reached === 1, 10_000);
    link.fail();
    await waitFor(() => link.made("run:changes") === 2, 5_000).catch(() => undefined);

    const cancelled = (await t.client.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun;
    expect(cancelled.__typename).toBe("CancelRunSuccess");
    // Without the announcement, only the next lease renewal (a third of the lease, 40 s away) would stop it.
    await waitFor(() => stopped.length === 1, 10_000);
    expect((await settled(t.client, run.id)).status).toBe("CANCELLED");
  }, 30_000);
});
