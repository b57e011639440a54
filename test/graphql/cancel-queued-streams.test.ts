// Every stream ends (issue 34): a run cancelled while still QUEUED never had a trace, so nothing
// used to end one — its traceUpdates and runOutput subscribers, attached while it waited, waited
// forever. The cancellation now ends the run's trace (creating it) in its own transaction, so all
// three of a queued run's streams complete right after it: traceUpdates with TRACE_ENDED, runOutput
// with RUN_DONE, runEvents with CANCELLED. No worker runs here, so the run stays QUEUED until cancelled.
import { afterEach, describe, expect, it } from "vitest";
import { CancelRunDocument, RunEventsDocument, RunOutputDocument, RunTraceDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil, withTimeout } from "../support/wait.js";

/** Consumes a stream to its end; returns what it saw and when it ended. */
async function drain<T, R>(stream: AsyncIterable<T>, pick: (item: T) => R): Promise<{ seen: R[]; endedAt: number }> {
  const seen: R[] = [];
  for await (const item of stream) seen.push(pick(item));
  return { seen, endedAt: performance.now() };
}

const iterable = <T>(iterator: AsyncIterableIterator<T>): AsyncIterable<T> => ({ [Symbol.asyncIterator]: () => iterator });

describe.each(backends)("cancelling a queued run on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("ends its trace: traceUpdates, runOutput and runEvents subscribers all complete within a second", async () => {
    t = await startTestApp(backend, { listen: true });
    const client = t.connect();
    const { run } = await admit(client, { question: "never started" });
    expect(run.status).toBe("QUEUED");
    const listening = t.listeners();
    const trace = drain(client.traceUpdates(run.id), (update) => update.kind);
    const output = drain(iterable(client.subscribe(RunOutputDocument, { runId: run.id })), (update) => update.runOutput.kind);
    const statuses = drain(iterable(client.subscribe(RunEventsDocument, { runId: run.id })), (event) => event.runEvents.status);
    // All three listen on the event bus before the run is cancelled.
    await waitUntil(() => (t!.listeners() >= listening + 3 ? true : undefined), 10_000);
    expectType((await client.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun, "CancelRunSuccess");
    // Measured from the cancellation's answer: it has committed, and every stream hears of it now.
    const cancelledAt = performance.now();
    const [traced, outputted, statused] = await withTimeout(Promise.all([trace, output, statuses]), 10_000);
    for (const [name, ended] of [
      ["traceUpdates", traced],
      ["runOutput", outputted],
      ["runEvents", statused],
    ] as const) {
      expect(ended.endedAt - cancelledAt, `${name} completed ${Math.round(ended.endedAt - cancelledAt)} ms after the cancellation`).toBeLessThan(1_000);
    }
    expect(traced.seen).toEqual(["TRACE_ENDED"]);
    expect(outputted.seen).toEqual(["RUN_DONE"]);
    expect(statused.seen).toEqual(["QUEUED", "CANCELLED"]);
    // The trace is there, ended, for whoever reads it later.
    const node = (await client.request(RunTraceDocument, { id: run.id })).node;
    expect(node?.__typename === "Run" && node.trace?.__typename === "Trace" && node.trace.endedAt).toBeTruthy();
  }, 60_000);
});
