// client.watchRun() after RESYNC_REQUIRED: a consumer always slower than the run's output is told
// to resync on every stream; the SDK opens the next one after a wait that doubles while the
// resyncs keep coming, instead of subscribing again at once in a tight loop.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { RunOutputSubscription } from "../../sdk/generated/graphql.js";
import { type RunOutputSource, type RunOutputUpdate, watchRunUpdates } from "../../sdk/run-output.js";

const update = (seq: string, kind: RunOutputUpdate["kind"], text: string | null = null): RunOutputSubscription => ({
  __typename: "Subscription",
  runOutput: { __typename: "RunOutputUpdate", seq, kind, modelCallSpanId: text === null ? null : "call", text, toolCallId: null },
});

/** A source whose every stream brings one character, then RESYNC_REQUIRED; its `last`-th brings RUN_DONE instead. */
function alwaysBehind(last: number) {
  const source = {
    opens: 0,
    open(): AsyncIterableIterator<RunOutputSubscription> {
      source.opens += 1;
      const n = source.opens;
      return (async function* () {
        if (n === last) return yield update(`${n}`, "RUN_DONE");
        yield update(`1:${n}`, "TEXT_DELTA", "x");
        yield update(`1:${n}`, "RESYNC_REQUIRED");
      })();
    },
    answer: async () => null,
    isFinal: () => false,
  } satisfies RunOutputSource & { opens: number };
  return source;
}

describe("watchRunUpdates after RESYNC_REQUIRED", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits 250 ms, then twice as long after each resync in a row (at most 4 s), before opening again", async () => {
    const source = alwaysBehind(9);
    const kinds: string[] = [];
    const watching = (async () => {
      for await (const each of watchRunUpdates(source, undefined)) kinds.push(each.kind);
    })();
    await vi.advanceTimersByTimeAsync(0);
    expect(source.opens).toBe(1);
    const opensAfter: number[] = [];
    for (const wait of [250, 500, 1_000, 2_000, 4_000, 4_000, 4_000]) {
      await vi.advanceTimersByTimeAsync(wait - 1);
      opensAfter.push(source.opens);
      await vi.advanceTimersByTimeAsync(1);
      opensAfter.push(source.opens);
    }
    expect(opensAfter).toEqual([1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8]);
    await vi.advanceTimersByTimeAsync(4_000);
    await watching;
    expect(source.opens).toBe(9);
    expect(kinds).toEqual([...Array.from({ length: 8 }, () => "TEXT_DELTA"), "RUN_DONE"]);
  });
});
