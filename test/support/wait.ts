// Waiting in tests, bounded: polls a condition (vitest's vi.waitFor), races a promise against a
// deadline, or lets time pass on purpose where a test proves that something does not happen.
import { vi } from "vitest";

export async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  await vi.waitFor(
    () => {
      if (!condition()) throw new Error("timed out waiting");
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no result within ${ms} ms`)), ms))]);
}

/** Polls until the probe gives a value (anything but undefined) and returns it. */
export function waitUntil<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (value === undefined) throw new Error(`timed out after ${timeoutMs} ms`);
      return value;
    },
    { timeout: timeoutMs, interval: everyMs },
  );
}

/**
 * Lets `ms` pass so that what a test expects NOT to happen has had its chance to: an absence
 * gives nothing to poll for. `what` names it, for the reader (e.g. "a second start of the tool").
 */
export function allowTimeFor(_what: string, ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
