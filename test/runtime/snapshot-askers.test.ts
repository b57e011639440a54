// Whose characters a snapshot answer spends (bus-run-output.ts): the asker's — the subscriber's
// principal's own, or all of its access tokens' together — not the run owner's. An end user holding
// a token to one of a principal's runs, asking for it over and over while its call streams large
// tool arguments, holds up its own and the principal's other tokens' later answers (taking turns in
// the order asked): the principal's own joins are answered at once. However many tokens a principal
// mints, they cost the bus what one asker does. Exact times, on faked timers.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createEventBus, type SnapshotAsker } from "../../src/events/topics.js";
import { BusRunOutput, SNAPSHOT_CHARS_PER_SECOND } from "../../src/runtime/adapters/bus-run-output.js";
import { allowTimeFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ARGUMENTS = "y".repeat(256 * 1024);
/** A 256 KiB answer spends a quarter of a second of its asker's characters. */
const TURN = (ARGUMENTS.length / SNAPSHOT_CHARS_PER_SECOND) * 1000;

const alice: SnapshotAsker = { principalId: "alice" };
const endUser: SnapshotAsker = { principalId: "alice", tokenId: "token-of-an-end-user" };
const otherEndUser: SnapshotAsker = { principalId: "alice", tokenId: "token-of-another-end-user" };

/** Alice's runs executing here: `large` streams 256 KiB of tool arguments, the others a few words; each snapshot's time after the start. */
async function executing() {
  const events = createEventBus();
  const output = new BusRunOutput(events, { snapshotEveryMs: 100 });
  output.start();
  cleanups.push(() => output.stop());
  const answered: Record<string, number[]> = { large: [], second: [], third: [] };
  for (const runId of Object.keys(answered))
    void (async () => {
      for await (const frame of events.subscribe("run:output", runId)) if (frame.kind === "SNAPSHOT") answered[runId]!.push(performance.now());
    })();
  await allowTimeFor("the listeners to subscribe", 20);
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  cleanups.push(async () => vi.useRealTimers());
  output
    .modelCall({ runId: "large", ownerId: "alice", spanId: "call-large", follows: null })
    .report({ type: "tool_call_delta", index: 0, id: "t1", delta: ARGUMENTS });
  for (const runId of ["second", "third"])
    output.modelCall({ runId, ownerId: "alice", spanId: `call-${runId}`, follows: null }).report({ type: "text", delta: `text of ${runId}` });
  const start = performance.now();
  const since = () => Object.fromEntries(Object.entries(answered).map(([runId, at]) => [runId, at.map((t) => t - start)]));
  return { events, since };
}

/** Publishes each ask at its time (ms after the start), 10 ms at a time, up to `until`. */
async function asking(events: ReturnType<typeof createEventBus>, asks: [at: number, runId: string, asker?: SnapshotAsker][], until: number) {
  for (let at = 0; at <= until; at += 10) {
    for (const [when, runId, asker] of asks) if (when === at) events.publish("run:output:wanted", asker ? { runId, asker } : { runId });
    await vi.advanceTimersByTimeAsync(10);
  }
}

describe("whose characters a snapshot answer spends", () => {
  it("an access token asking over and over for a large run of alice's holds up alice's tokens' answers, not alice's own", async () => {
    expect(TURN).toBe(250);
    const { events, since } = await executing();
    // The end user asks for the large run every 10 ms until its second answer is due.
    const endUserAsks = Array.from({ length: 24 }, (_, i): [number, string, SnapshotAsker] => [i * 10, "large", endUser]);
    await asking(events, [...endUserAsks, [20, "second", alice], [20, "third", otherEndUser], [30, "third", endUser], [700, "third", alice]], 1_000);
    expect(since()).toEqual({
      // The end user's: at once, then once its own characters allow.
      large: [0, TURN],
      // Alice joins her other run: at once, whatever the end user's asks spent.
      second: [20],
      // Another end user's join waits for the tokens' turn, after the large run's (asked first), and
      // answers the first end user's join of it too; alice's join later is answered at once.
      third: [2 * TURN, 700],
    });
  });

  it("counts an ask that names no asker (an older server's) against the run's principal", async () => {
    const { events, since } = await executing();
    await asking(
      events,
      [
        [0, "large"],
        [20, "second", alice],
        [20, "third", endUser],
      ],
      400,
    );
    // The older server's ask spent alice's characters: her own join waits for her turn; the token's does not.
    expect(since()).toEqual({ large: [0], second: [TURN], third: [20] });
  });

  it("four tokens of alice's, each asking for a large run of its own, are answered one turn apart; alice's own join at once", async () => {
    const events = createEventBus();
    const output = new BusRunOutput(events, { snapshotEveryMs: 100 });
    output.start();
    cleanups.push(() => output.stop());
    const runs = ["one", "two", "three", "four", "alices"];
    const answered: Record<string, number[]> = Object.fromEntries(runs.map((runId) => [runId, []]));
    for (const runId of runs)
      void (async () => {
        for await (const frame of events.subscribe("run:output", runId)) if (frame.kind === "SNAPSHOT") answered[runId]!.push(performance.now());
      })();
    await allowTimeFor("the listeners to subscribe", 20);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    cleanups.push(async () => vi.useRealTimers());
    for (const runId of runs)
      output
        .modelCall({ runId, ownerId: "alice", spanId: `call-${runId}`, follows: null })
        .report({ type: "tool_call_delta", index: 0, id: "t1", delta: ARGUMENTS });
    const start = performance.now();
    const asks = runs.slice(0, 4).map((runId): [number, string, SnapshotAsker] => [0, runId, { principalId: "alice", tokenId: `token-${runId}` }]);
    await asking(events, [...asks, [10, "alices", alice]], 1_000);
    const since = Object.fromEntries(Object.entries(answered).map(([runId, at]) => [runId, at.map((t) => t - start)]));
    // One token's answer a turn, as one asker's would be: not four at once.
    expect(since).toEqual({ one: [0], two: [TURN], three: [2 * TURN], four: [3 * TURN], alices: [10] });
  });
});
