// One principal must not starve another's live output. Principal A starts runOutput subscriptions
// in a loop on its run (or on twenty of its runs) mid-call, whose tool arguments are large: each
// start asks the executing instance for the call's snapshot. Meanwhile principal B's run streams
// on the same instance, and B's subscriber listens on another. Real Redis, two buses (the
// executing instance, and the one A's and B's subscribers are on); counted exactly: the snapshots
// published for A's asks (a turn apart, whatever the number of A's runs), and B's frames, each
// heard once, in order, with its last.
import { afterEach, describe, expect, inject, it } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { RunOutputFrame } from "../../src/events/topics.js";
import { BusRunOutput, SNAPSHOT_CHARS_PER_SECOND, SNAPSHOT_EVERY_MS } from "../../src/runtime/adapters/bus-run-output.js";
import { warningLogger } from "../support/warning-logger.js";
import { allowTimeFor, waitFor } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ARGUMENTS = 256 * 1024;
const ASKS_AT_ONCE = 50;

describe.runIf(redisUrl || process.env.CI)("live output of two principals on one instance", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  // A's snapshots, one principal's characters a second, however many of A's runs are asked for:
  // answers a turn apart (a 256 KiB call's turn is a quarter of a second), and at most one more for each of A's calls as it ends.
  it.each([1, 20])(
    "B's run streams whole while A asks 5,000 times a second for the snapshots of %i run(s) with a large call",
    async (runsOfA) => {
      const prefix = `test-${process.pid}-${Date.now()}:output-fairness-${runsOfA}:`;
      const { logger, warnings } = warningLogger();
      const [executing, watching] = await Promise.all([createRedisEventBus(redisUrl!, prefix, { logger }), createRedisEventBus(redisUrl!, prefix, { logger })]);
      cleanups.push(() => Promise.all([executing.close(), watching.close()]));
      const runsA = Array.from({ length: runsOfA }, (_, i) => `runA${i}`);
      // What the executing instance publishes, as it publishes it.
      const snapshotsOfA: { runId: string; at: number }[] = [];
      const sentOfB: RunOutputFrame[] = [];
      const publish = executing.events.publish.bind(executing.events) as (...args: unknown[]) => void;
      (executing.events as { publish: unknown }).publish = (...args: unknown[]) => {
        const frame = args[2] as RunOutputFrame | undefined;
        if (args[0] === "run:output" && frame?.runId.startsWith("runA") && frame.kind === "SNAPSHOT")
          snapshotsOfA.push({ runId: frame.runId, at: performance.now() });
        if (args[0] === "run:output" && frame?.runId === "runB") sentOfB.push(frame);
        publish(...args);
      };
      const output = new BusRunOutput(executing.events, { logger });
      output.start();
      cleanups.push(() => output.stop());

      const heardOfB: RunOutputFrame[] = [];
      const lost: unknown[] = [];
      for (const runId of [...runsA, "runB"])
        void (async () => {
          for await (const frame of watching.events.subscribe("run:output", runId)) if (runId === "runB") heardOfB.push(frame);
        })().catch((error: unknown) => lost.push(error));
      await allowTimeFor("the subscriptions to reach Redis", 300);

      const callsOfA = runsA.map((runId) => output.modelCall({ runId, ownerId: "principalA", spanId: `call-${runId}`, follows: null }));
      for (const a of callsOfA) a.report({ type: "tool_call_delta", index: 0, id: "call_write", delta: "y".repeat(ARGUMENTS) });
      const b = output.modelCall({ runId: "runB", ownerId: "principalB", spanId: "callB", follows: null });
      let asks = 0;
      const churn = setInterval(() => {
        for (let i = 0; i < ASKS_AT_ONCE; i += 1) watching.events.publish("run:output:wanted", { runId: runsA[asks++ % runsOfA]! });
      }, 10);
      let pieces = 0;
      const streaming = setInterval(() => b.report({ type: "text", delta: `piece${String(pieces++).padStart(5, "0")} ` }), 5);
      // Two seconds of A's asks and B's pieces, and more than 1,000 asks: a busy machine may fire the
      // churn's timer less often than every 10 ms, so the asks are counted, not assumed.
      const churnStarted = performance.now();
      await waitFor(() => performance.now() - churnStarted >= 2_000 && asks > 1_000, 30_000);
      clearInterval(churn);
      clearInterval(streaming);
      b.end();
      const aEndedAt = performance.now();
      for (const a of callsOfA) a.end();

      const text = Array.from({ length: pieces }, (_, i) => `piece${String(i).padStart(5, "0")} `).join("");
      await waitFor(() => heardOfB.at(-1)?.final === true || lost.length > 0, 10_000);
      expect(lost).toEqual([]);
      // Nothing of the instance's live output was dropped for want of room in its publish backlog.
      expect(warnings.filter(([message]) => message.startsWith("Redis is not taking"))).toEqual([]);
      // Every frame of B's the instance sent was heard, in order: its text whole.
      expect(heardOfB).toEqual(sentOfB);
      expect(heardOfB.flatMap((frame) => frame.parts.map((part) => part.text)).join("")).toBe(text);
      const turn = Math.max(SNAPSHOT_EVERY_MS, (ARGUMENTS / SNAPSHOT_CHARS_PER_SECOND) * 1000);
      const whileStreaming = snapshotsOfA.filter(({ at }) => at < aEndedAt);
      expect(whileStreaming.length).toBeGreaterThan(1);
      // A turn apart, not the asks' 10 ms: timers count whole milliseconds and a snapshot published
      // a few milliseconds late (a busy machine) shortens the gap to the next by as much.
      for (let i = 1; i < whileStreaming.length; i += 1) expect(whileStreaming[i]!.at - whileStreaming[i - 1]!.at).toBeGreaterThanOrEqual(turn - 15);
      // Each of A's calls as it ends: the answer waiting for its turn, if one was, goes out once, ahead of its last frame.
      const atEnd = snapshotsOfA.filter(({ at }) => at >= aEndedAt).map(({ runId }) => runId);
      expect(new Set(atEnd).size).toBe(atEnd.length);
      expect(atEnd.length).toBeLessThanOrEqual(runsOfA);
    },
    60_000,
  );
});
