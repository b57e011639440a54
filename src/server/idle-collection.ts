// A server that has gone quiet gives back the memory its last requests (or its start) left behind.
// V8 keeps its young generation at the size the last busy period grew it to (up to 8 MB with
// --max-semi-space-size=4) and shrinks it only when its own memory reducer decides the process is
// idle, seconds to minutes later, or never while timers keep it busy. Once no HTTP request has
// arrived for a whole interval, one memory-reducing collection runs: what the inspector's
// HeapProfiler.collectGarbage does (V8's low-memory notification), the one way Node.js offers
// without --expose-gc. It stops JavaScript for a while (265–284 ms measured on an idle server, on a
// loaded 2-core machine), so it runs only when nobody could notice the pause: no request arrived in
// the interval, none is still being answered (an SSE stream is one), no WebSocket is open (a
// subscriber waiting for a run's output), and the event loop was nearly idle (no run working in this
// process); at most once per quiet period and once a minute.
import type { Server } from "node:http";
import { performance } from "node:perf_hooks";

/** A quiet period: no request for this long (checked at this interval, so 2–4 s after the last). */
export const QUIET_MS = 2_000;
/** The least time between two collections. */
export const SPACING_MS = 60_000;
/** The event loop's utilization over the interval below which the process counts as idle. */
export const IDLE_UTILIZATION = 0.05;

export type IdleCollection = {
  /** Memory-reducing collections run so far. */
  collections(): number;
  stop(): void;
};

export type QuietOptions = {
  quietMs?: number;
  spacingMs?: number;
  /** WebSocket connections open now (a subscriber could be waiting for a delta). */
  openSockets?: () => number;
  collect?: () => Promise<void>;
};

/** Runs `collect` (V8's memory-reducing collection) once each time `httpServer` has gone quiet, its start included. */
export function collectWhenQuiet(httpServer: Server, options: QuietOptions = {}): IdleCollection {
  const { quietMs = QUIET_MS, spacingMs = SPACING_MS, openSockets = () => 0, collect = reduceMemory } = options;
  // The start itself is the first busy period.
  let requests = 1;
  let inFlight = 0;
  let seenAtLastTick = 0;
  let collectedAt = 0;
  let collections = 0;
  let lastCollection = Number.NEGATIVE_INFINITY;
  let loop = performance.eventLoopUtilization();
  const count = (_request: unknown, response: { once(event: "close", listener: () => void): unknown }) => {
    requests += 1;
    inFlight += 1;
    response.once("close", () => {
      inFlight -= 1;
    });
  };
  httpServer.on("request", count);
  const timer = setInterval(() => {
    const busy = performance.eventLoopUtilization(loop).utilization >= IDLE_UTILIZATION;
    loop = performance.eventLoopUtilization();
    if (requests !== seenAtLastTick || busy || inFlight > 0 || openSockets() > 0) {
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
