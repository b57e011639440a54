// How a worker's claim pass sends its claims (claim-passes.ts, claimInRounds): one claim of one
// run on a wake-up, then one claim at a time, each asking for four times as many runs while every
// claim took all it asked for (at most 64), never more than the free slots; every run a claim took begins.
// The next pass starts at the last claim's width while claims take runs, at one run once one took none.
// A pass says whether only freed slots woke it (the worker then claims only while runs were left waiting).
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logger.js";
import { ClaimPasses, claimInRounds } from "../../src/runtime/claim-passes.js";

/** A queue of `waiting` runs; records how many runs each claim asked for, and whether claims overlapped. */
function harness({ waiting, slots, failAt }: { waiting: number; slots: number; failAt?: number }) {
  let from = 1;
  let next = 0;
  let inFlight = 0;
  let overlapped = false;
  const asked: number[] = [];
  const begun: number[] = [];
  const claim = async (count: number) => {
    asked.push(count);
    inFlight += 1;
    overlapped ||= inFlight > 1;
    await new Promise((resolve) => setTimeout(resolve, 1));
    inFlight -= 1;
    if (asked.length === failAt) throw new Error("the database went away");
    const taken = Math.min(count, waiting - next);
    return Array.from({ length: taken }, () => ({ run: next++ }));
  };
  const pass = async () => {
    ({ width: from } = await claimInRounds({ free: () => slots - begun.length, claim, begin: ({ run }: { run: number }) => void begun.push(run), from }));
  };
  /** More runs are admitted. */
  const admit = (count: number) => void (waiting += count);
  return { pass, admit, asked, begun, overlapped: () => overlapped };
}

describe("a worker's claim rounds", () => {
  it("an idle wake-up sends one claim of one run", async () => {
    const h = harness({ waiting: 0, slots: 100 });
    await h.pass();
    expect(h.asked).toEqual([1]);
    expect(h.begun).toEqual([]);
  });

  it("a burst of 100 runs is claimed in five claims, one at a time: 1, 4, 16, 64 and the 15 left", async () => {
    const h = harness({ waiting: 100, slots: 100 });
    await h.pass();
    expect(h.asked).toEqual([1, 4, 16, 64, 15]);
    expect(h.overlapped()).toBe(false);
    expect(h.begun.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it("stops at the first claim that took fewer runs than it asked for, and never asks for more than 64", async () => {
    const h = harness({ waiting: 150, slots: 1_000 });
    await h.pass();
    expect(h.asked).toEqual([1, 4, 16, 64, 64, 64]);
    expect(h.begun).toHaveLength(150);
  });

  it("never asks for more runs than the worker has free slots", async () => {
    const h = harness({ waiting: 30, slots: 5 });
    await h.pass();
    expect(h.asked).toEqual([1, 4]);
    expect(h.begun).toHaveLength(5);
  });

  it("begins every run the claims before a failed one took, then reports the failure", async () => {
    const h = harness({ waiting: 30, slots: 100, failAt: 3 });
    await expect(h.pass()).rejects.toThrow("the database went away");
    expect(h.asked).toEqual([1, 4, 16]);
    expect(h.begun).toHaveLength(5);
  });

  it("a burst admitted over several passes: each pass starts at the width the last one reached, until one finds nothing", async () => {
    const h = harness({ waiting: 10, slots: 1_000 });
    await h.pass();
    h.admit(40);
    await h.pass();
    h.admit(30);
    await h.pass();
    await h.pass();
    await h.pass();
    expect(h.asked).toEqual([1, 4, 16, 16, 64, 64, 64, 1]);
    expect(h.begun).toHaveLength(80);
  });

  it("a claim that took nothing says whether it found runs waiting; a claim that does not say is taken to have found some", async () => {
    const none = async () => Object.assign([] as number[], { runsWaiting: false });
    const held = async () => Object.assign([] as number[], { runsWaiting: true });
    const begin = () => undefined;
    expect(await claimInRounds({ free: () => 4, claim: none, begin })).toEqual({ width: 1, runsWaiting: false });
    expect(await claimInRounds({ free: () => 4, claim: held, begin })).toEqual({ width: 1, runsWaiting: true });
    expect(await claimInRounds({ free: () => 4, claim: async () => [] as number[], begin })).toEqual({ width: 1, runsWaiting: true });
    // No slot free: nothing was looked at, so runs may be waiting.
    expect(await claimInRounds({ free: () => 0, claim: none, begin })).toEqual({ width: 1, runsWaiting: true });
  });
});

describe("a worker's claim passes", () => {
  it("tell a pass whether only freed slots woke it: slots freed during a pass share one more, an announcement among them makes it a full one", async () => {
    const passes: { sweep: boolean; freedOnly: boolean }[] = [];
    let finish: () => void = () => undefined;
    const claims = new ClaimPasses({
      pass: async (due) => {
        passes.push(due);
        await new Promise<void>((resolve) => (finish = resolve));
      },
      sweepMs: 3_600_000,
      logger: silentLogger,
    });
    /** The pass in progress ends; the next one, if any, has begun. */
    const ended = async () => {
      finish();
      await new Promise((resolve) => setImmediate(resolve));
    };
    claims.start();
    await ended();
    claims.wake({ freed: true });
    claims.wake({ freed: true });
    claims.wake({ freed: true });
    await ended();
    await ended();
    claims.wake({ freed: true });
    claims.wake();
    claims.wake({ freed: true });
    await ended();
    await ended();
    await claims.stop();
    expect(passes).toEqual([
      { sweep: true, freedOnly: false },
      // Three freed slots: one pass, then one more for the two freed during it.
      { sweep: false, freedOnly: true },
      { sweep: false, freedOnly: true },
      // An announcement during a pass: the one after it is a full pass.
      { sweep: false, freedOnly: true },
      { sweep: false, freedOnly: false },
    ]);
  });
});
