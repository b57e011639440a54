// A subscription of a token's ends at the token's expiry; its timer is let go as soon as the
// subscription ends by any path — finished, returned, or its source failing (nobody calls
// return() after a throw, so a timer kept then would hold the subscription's closure until expiry).
import { afterEach, describe, expect, it, vi } from "vitest";
import { untilExpiry } from "../../src/graphql/access-grants.js";

afterEach(() => {
  vi.useRealTimers();
});

async function* failing() {
  yield 1;
  throw new Error("the source failed");
}

async function* two() {
  yield 1;
  yield 2;
}

describe("untilExpiry", () => {
  const inAnHour = () => new Date(Date.now() + 3_600_000);

  it("lets its timer go when the source fails", async () => {
    vi.useFakeTimers();
    const events = untilExpiry(failing(), inAnHour(), () => new Date());
    expect(await events.next()).toEqual({ done: false, value: 1 });
    expect(vi.getTimerCount()).toBe(1);
    await expect(events.next()).rejects.toThrow("the source failed");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("lets its timer go when the source ends or the subscriber leaves", async () => {
    vi.useFakeTimers();
    const ended = untilExpiry(two(), inAnHour(), () => new Date());
    const seen: number[] = [];
    for await (const value of ended) seen.push(value);
    expect(seen).toEqual([1, 2]);
    expect(vi.getTimerCount()).toBe(0);
    const left = untilExpiry(two(), inAnHour(), () => new Date());
    await left.next();
    await left.return?.();
    expect(vi.getTimerCount()).toBe(0);
  });
});
