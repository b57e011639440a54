// The executing instance's answers to asks for a run's snapshots (runOutput subscribers joining
// mid-call): one principal starting subscriptions in a loop on its run, whose call streams large
// tool arguments, must not make the instance publish the whole call once per ask. Counted exactly:
// the snapshots published for a burst of asks, and that every asker still gets one sent after it asked.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createEventBus, type RunOutputFrame } from "../../src/events/topics.js";
import { BusRunOutput, SNAPSHOT_CHARS_PER_SECOND } from "../../src/runtime/adapters/bus-run-output.js";
import { allowTimeFor, waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ARGUMENTS = "y".repeat(256 * 1024);

async function executing(snapshotEveryMs: number, snapshotCharsPerSecond?: number, runIds = ["runA", "runB"]) {
  const events = createEventBus();
  const output = new BusRunOutput(events, { snapshotEveryMs, snapshotCharsPerSecond });
  output.start();
  cleanups.push(() => output.stop());
  const snapshots: { runId: string; at: number; chars: number }[] = [];
  for (const runId of runIds)
    void (async () => {
      for await (const frame of events.subscribe("run:output", runId))
        if (frame.kind === "SNAPSHOT") snapshots.push({ runId, at: performance.now(), chars: JSON.stringify(frame).length });
    })();
  // The listeners are subscribed once the loops reached their first read.
  await allowTimeFor("the listeners to subscribe", 20);
  return { events, output, snapshots };
}

describe("answers to asks for a run's snapshots", () => {
  it("gives a run's call whole twice for 500 asks in one window (once at once, once at the window's end), not 500 times", async () => {
    const { events, output, snapshots } = await executing(200);
    const call = output.modelCall({ runId: "runA", ownerId: "alice", spanId: "callA", follows: null });
    call.report({ type: "tool_call_delta", index: 0, id: "t1", delta: ARGUMENTS });

    const askedAt = performance.now();
    for (let i = 0; i < 500; i += 1) events.publish("run:output:wanted", { runId: "runA" });
    await waitFor(() => snapshots.length >= 1, 2_000);
    // The first ask is answered at once: a subscriber joining alone waits for no window.
    expect(snapshots[0]!.at - askedAt).toBeLessThan(150);
    await waitFor(() => snapshots.length >= 2, 2_000);
    await allowTimeFor("answers to further asks, were they given one each", 400);
    expect(snapshots).toHaveLength(2);
    // The second comes after the asks, so every asker hears one sent after its ask.
    expect(snapshots[1]!.at).toBeGreaterThan(askedAt);
    const published = snapshots.reduce((sum, snapshot) => sum + snapshot.chars, 0);
    expect(published).toBeLessThan(2 * ARGUMENTS.length + 1_000);

    // A window with no ask after it: the next ask is answered at once again.
    const later = performance.now();
    events.publish("run:output:wanted", { runId: "runA" });
    await waitFor(() => snapshots.length === 3, 2_000);
    expect(snapshots[2]!.at - later).toBeLessThan(150);
  });

  it("spaces a large call's answers by its size: 256 KiB at 512 KiB a second, half a second apart", async () => {
    const { events, output, snapshots } = await executing(50, 512 * 1024);
    output
      .modelCall({ runId: "runA", ownerId: "alice", spanId: "callA", follows: null })
      .report({ type: "tool_call_delta", index: 0, id: "t1", delta: ARGUMENTS });
    events.publish("run:output:wanted", { runId: "runA" });
    await waitFor(() => snapshots.length === 1, 2_000);
    events.publish("run:output:wanted", { runId: "runA" });
    await waitFor(() => snapshots.length === 2, 2_000);
    // Timers fire on the loop's millisecond clock: a millisecond early at most.
    expect(snapshots[1]!.at - snapshots[0]!.at).toBeGreaterThanOrEqual(499);
  });

  it("gives one answer for the asks of a window whose answer is late on a busy loop, not one more for an ask after the window", async () => {
    const { events, output, snapshots } = await executing(100);
    output.modelCall({ runId: "runA", ownerId: "alice", spanId: "callA", follows: null }).report({ type: "text", delta: "so far" });
    const settle = async () => {
      for (let i = 0; i < 50; i += 1) await Promise.resolve();
    };
    events.publish("run:output:wanted", { runId: "runA" });
    await settle();
    expect(snapshots).toHaveLength(1);
    events.publish("run:output:wanted", { runId: "runA" });
    await settle();
    // The loop is busy past the window's end: the answer due then has not gone when the next ask comes.
    const busyUntil = performance.now() + 150;
    while (performance.now() < busyUntil);
    events.publish("run:output:wanted", { runId: "runA" });
    await settle();
    expect(snapshots).toHaveLength(1);
    await waitFor(() => snapshots.length === 2, 2_000);
    await allowTimeFor("a further answer, were one given", 300);
    expect(snapshots).toHaveLength(2);
  });

  it("answers each run's asks on their own: one run's window does not hold another's of the same principal", async () => {
    const { events, output, snapshots } = await executing(10_000);
    for (const runId of ["runA", "runB"])
      output.modelCall({ runId, ownerId: "alice", spanId: `call-${runId}`, follows: null }).report({ type: "text", delta: `text of ${runId}` });
    for (let i = 0; i < 50; i += 1) events.publish("run:output:wanted", { runId: "runA" });
    events.publish("run:output:wanted", { runId: "runB" });
    await waitFor(() => snapshots.length === 2, 2_000);
    expect(snapshots.map((snapshot) => snapshot.runId).sort()).toEqual(["runA", "runB"]);
    await allowTimeFor("further answers, were they given one per ask", 300);
    expect(snapshots).toHaveLength(2);
  });

  it("gives twenty runs of one principal, asked for over and over, one principal's characters a second, each run in its turn", async () => {
    const alice = Array.from({ length: 20 }, (_, i) => `alice${i}`);
    const { events, output, snapshots } = await executing(100, undefined, [...alice, "bob0"]);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    cleanups.push(async () => vi.useRealTimers());
    for (const runId of [...alice, "bob0"])
      output
        .modelCall({ runId, ownerId: runId.replace(/\d+$/, ""), spanId: `call-${runId}`, follows: null })
        .report({ type: "tool_call_delta", index: 0, id: "t1", delta: ARGUMENTS });
    // A 256 KiB answer spends a quarter of a second of its principal's characters.
    const turn = (ARGUMENTS.length / SNAPSHOT_CHARS_PER_SECOND) * 1000;
    expect(turn).toBe(250);
    const start = performance.now();
    for (let at = 0; at < 6_000; at += 10) {
      for (const runId of alice) events.publish("run:output:wanted", { runId });
      if (at === 1_000) events.publish("run:output:wanted", { runId: "bob0" });
      await vi.advanceTimersByTimeAsync(10);
    }
    const ofAlice = snapshots.filter((snapshot) => snapshot.runId.startsWith("alice"));
    // One answer at once, then one a turn: 25 in 6 s, not 25 for each of the 20 runs.
    expect(ofAlice).toHaveLength(1 + 6_000 / turn);
    for (let i = 1; i < ofAlice.length; i += 1) expect(ofAlice[i]!.at - ofAlice[i - 1]!.at).toBe(turn);
    // Every run had its turn, in the order asked, and the first again after them.
    expect(ofAlice.map((snapshot) => snapshot.runId)).toEqual([...alice, ...alice.slice(0, 5)]);
    // Bob's run is answered at once, whatever Alice's runs wait for.
    expect(snapshots.filter((snapshot) => snapshot.runId === "bob0").map((snapshot) => snapshot.at - start)).toEqual([1_000]);
  });

  it("ignores asks for a run it does not execute", async () => {
    const { events, snapshots } = await executing(100);
    const frames: RunOutputFrame[] = [];
    void (async () => {
      for await (const frame of events.subscribe("run:output", "elsewhere")) frames.push(frame);
    })();
    events.publish("run:output:wanted", { runId: "elsewhere" });
    await allowTimeFor("an answer, were one given", 200);
    expect([...frames, ...snapshots]).toEqual([]);
  });
});
