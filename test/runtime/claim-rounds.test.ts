// How a worker's claim pass sends its claims (claim-passes.ts, claimInRounds): one claim of one
// run on a wake-up, then one claim at a time, each asking for four times as many runs while every
// claim took all it asked for (at most 64), never more than the free slots; every run a claim took begins.
// The next pass starts at the last claim's width while claims take runs, at one run once one took none.
import { describe, expect, it } from "vitest";
import { claimInRounds } from "../../src/runtime/claim-passes.js";

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
    from = await claimInRounds({ free: () => slots - begun.length, claim, begin: ({ run }: { run: number }) => void begun.push(run), from });
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
});
