// A burst of run changes larger than the event bus keeps for one subscriber (another instance
// cancelling a thousand runs at once) must not leave a worker deaf: a run it executes and that is
// cancelled afterwards still stops at once (its tool call is aborted).
import { afterEach, expect, it } from "vitest";
import { CancelRunDocument } from "../../sdk/generated/graphql.js";
import { createEventBus, publishRunStatus, SUBSCRIBER_LIMIT } from "../../src/events/topics.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, expectType } from "../support/fixtures.js";
import { sandbox, turnsModel } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { countUncaughtWhile } from "../support/uncaught.js";
import { waitUntil } from "../support/wait.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

it("a worker still hears a cancel after a burst of more run changes than the bus keeps for it", async () => {
  const events = createEventBus();
  const calls = { started: 0, aborted: 0 };
  const work: Tool = {
    schema: { name: "work", description: "does some work", parameters: { type: "object", properties: {} } },
    execute: (_args, { signal }) =>
      new Promise((_resolve, reject) => {
        calls.started += 1;
        signal.addEventListener("abort", () => {
          calls.aborted += 1;
          reject(signal.reason);
        });
      }),
  };
  t = await startTestApp("pglite", { events, runtime: { model: turnsModel(1), sandboxDir: sandbox(), extraTools: [work], concurrency: 1, leaseMs: 60_000 } });
  const { run } = await admit(t.client, { question: "Work." });
  await waitUntil(() => (calls.started === 1 ? true : undefined), 20_000);
  const uncaught = await countUncaughtWhile(async () => {
    // In one turn: no subscriber takes any of them before the last.
    for (let i = 0; i < SUBSCRIBER_LIMIT + 100; i += 1) publishRunStatus(events, `other-${i}`, "CANCELLED");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expectType((await t!.client.request(CancelRunDocument, { input: { runId: run.id, mode: "NOW" } })).cancelRun, "CancelRunSuccess");
    // Heard on the bus at once, not at the lease's next renewal (a minute's lease: tens of seconds away).
    await waitUntil(() => (calls.aborted === 1 ? true : undefined), 5_000);
  });
  expect(uncaught).toEqual([]);
  expect(calls).toEqual({ started: 1, aborted: 1 });
});
