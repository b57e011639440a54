// How a worker's claim pass sends its claims (claim-passes.ts, claimInRounds): one claim on a
// wake-up, then rounds twice as wide while every claim finds a run, never more than the free
// slots; every run a round claimed begins even when another claim of that round failed.
import { describe, expect, it } from "vitest";
import { claimInRounds } from "../../src/runtime/claim-passes.js";

/** A queue of `waiting` runs claimed by concurrent claims; records how many claims each round sent at once. */
function harness({ waiting, slots, failAt }: { waiting: number; slots: number; failAt?: number }) {
  let next = 0;
  let sent = 0;
  let inFlight = 0;
  const rounds: number[] = [];
  const begun: number[] = [];
  const claim = async () => {
    sent += 1;
    inFlight += 1;
    if (inFlight === 1) rounds.push(0);
    rounds[rounds.length - 1]! += 1;
    const mine = sent;
    await new Promise((resolve) => setTimeout(resolve, 1));
    inFlight -= 1;
    if (mine === failAt) throw new Error("the database went away");
    return next < waiting ? { run: next++ } : null;
  };
  const pass = () => claimInRounds({ free: () => slots - begun.length, claim, begin: ({ run }: { run: number }) => void begun.push(run) });
  return { pass, rounds, begun, sent: () => sent };
}

describe("a worker's claim rounds", () => {
  it("an idle wake-up sends one claim", async () => {
    const h = harness({ waiting: 0, slots: 100 });
    await h.pass();
    expect(h.sent()).toBe(1);
    expect(h.begun).toEqual([]);
  });

  it("a burst is claimed in rounds of 1, 2, 4, 8, 8… and stops at the first round that found fewer runs than it asked for", async () => {
    const h = harness({ waiting: 30, slots: 100 });
    await h.pass();
    expect(h.rounds).toEqual([1, 2, 4, 8, 8, 8]);
    expect(h.begun.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it("never sends more claims than the worker has free slots", async () => {
    const h = harness({ waiting: 30, slots: 5 });
    await h.pass();
    expect(h.rounds).toEqual([1, 2, 2]);
    expect(h.begun).toHaveLength(5);
  });

  it("begins every run its round claimed when another claim of the round failed, then reports the failure", async () => {
    const h = harness({ waiting: 30, slots: 100, failAt: 3 });
    await expect(h.pass()).rejects.toThrow("the database went away");
    // Rounds 1 (one run) and 2 (two claims: one run, one failure): both runs claimed began.
    expect(h.rounds).toEqual([1, 2]);
    expect(h.begun).toHaveLength(2);
  });
});
