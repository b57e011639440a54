// An attempt's own clock: it stops the attempt at the lease minus the margin after the last
// renewal was sent — not after it was answered — and only a newer renewal moves that point.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { OwnClock } from "../../src/runtime/attempt/own-clock.js";

let now = 0;
beforeEach(() => {
  vi.useFakeTimers();
  now = 1_000;
});
afterEach(() => vi.useRealTimers());

const advance = (ms: number) => {
  now += ms;
  vi.advanceTimersByTime(ms);
};

it("expires at lease − margin after the claim was sent, and a renewal moves that point from when it was sent", () => {
  const expired: number[] = [];
  const clock = new OwnClock({ leaseMs: 3_000, marginMs: 1_000, onExpired: (silent) => expired.push(silent), now: () => now }, now);
  advance(1_000);
  const sentAt = now;
  // The renewal took 800 ms to answer: the lease runs from when it was sent.
  advance(800);
  clock.renewed(sentAt);
  expect(clock.remainingMs()).toBe(1_200);
  // An older renewal answered late changes nothing.
  clock.renewed(sentAt - 500);
  expect(clock.remainingMs()).toBe(1_200);
  advance(1_199);
  expect(expired).toEqual([]);
  advance(1);
  expect(expired).toEqual([2_000]);
  expect(clock.remainingMs()).toBe(0);
  // Once expired, a renewal cannot bring it back: the attempt has stopped.
  clock.renewed(now);
  expect(clock.remainingMs()).toBe(0);
  advance(10_000);
  expect(expired).toHaveLength(1);
});

it("never fires once stopped", () => {
  const onExpired = vi.fn();
  const clock = new OwnClock({ leaseMs: 2_000, marginMs: 400, onExpired, now: () => now }, now);
  clock.stop();
  advance(5_000);
  expect(onExpired).not.toHaveBeenCalled();
});

it("is not started again by a renewal answered after the attempt ended", () => {
  const onExpired = vi.fn();
  const clock = new OwnClock({ leaseMs: 2_000, marginMs: 400, onExpired, now: () => now }, now);
  const sentAt = now;
  advance(100);
  clock.stop();
  // The worker's renewal of all its attempts was in flight when this one ended.
  clock.renewed(sentAt + 50);
  advance(5_000);
  expect(onExpired).not.toHaveBeenCalled();
});
