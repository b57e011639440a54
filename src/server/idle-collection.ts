// A server that has gone quiet gives back the memory its last requests (or its start) left behind.
// V8 keeps its young generation at the size the last busy period grew it to (up to 8 MB with
// --max-semi-space-size=4) and shrinks it only when its own memory reducer decides the process is
// idle, seconds to minutes later, or never while timers keep it busy. Once no HTTP request has
// arrived for a whole interval, one memory-reducing collection runs: what the inspector's
// HeapProfiler.collectGarbage does (V8's low-memory notification), the one way Node.js offers
// without --expose-gc. It stops JavaScript for a while (265–284 ms measured on an idle server, on a
// loaded 2-core machine), so it runs at most once per quiet period and at most once a minute: a
// server under load never pays for it, one with a request every few seconds rarely.
import type { Server } from "node:http";

/** A quiet period: no request for this long (checked at this interval, so 2–4 s after the last). */
export const QUIET_MS = 2_000;
/** The least time between two collections. */
export const SPACING_MS = 60_000;

export type IdleCollection = {
  /** Memory-reducing collections run so far. */
  collections(): number;
  stop(): void;
};

/** Runs `collect` (V8's memory-reducing collection) once each time `httpServer` has gone quiet, its start included. */
export function collectWhenQuiet(httpServer: Server, { quietMs = QUIET_MS, spacingMs = SPACING_MS, collect = reduceMemory } = {}): IdleCollection {
  // The start itself is the first busy period.
  let requests = 1;
  let seenAtLastTick = 0;
  let collectedAt = 0;
  let collections = 0;
  let lastCollection = Number.NEGATIVE_INFINITY;
  const count = () => {
    requests += 1;
  };
  httpServer.on("request", count);
  const timer = setInterval(() => {
    if (requests !== seenAtLastTick) {
      seenAtLastTick = requests;
      return;
    }
    if (requests === collectedAt || performance.now() - lastCollection < spacingMs) return;
    collectedAt = requests;
    lastCollection = performance.now();
    collections += 1;
    void collect();
  }, quietMs);
  timer.unref();
  return {
    collections: () => collections,
    stop() {
      clearInterval(timer);
      httpServer.off("request", count);
    },
  };
}

/** V8's low-memory collection through an in-process inspector session (a no-op where Node.js was built without the inspector). */
async function reduceMemory(): Promise<void> {
  try {
    const { Session } = await import("node:inspector");
    const session = new Session();
    session.connect();
    await new Promise<void>((resolve) => session.post("HeapProfiler.collectGarbage", () => resolve()));
    session.disconnect();
  } catch {
    // No inspector in this Node.js: V8's own memory reducer does it later.
  }
}
