// A process closing its uses of Redis (the event bus, the rate limits: as it shuts down) while
// Redis is unreachable, through a fault proxy: the close ends within a bound even on a link that
// hangs, and then nothing tries to reach Redis again — the proxy sees no further connection, none
// is open once Redis is back, and Dossier's log says nothing more (no "reachable again").
import { afterEach, describe, expect, inject, it } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { LogFields, Logger } from "../../src/logger.js";
import { RedisTokenBuckets } from "../../src/server/redis-token-buckets.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { allowTimeFor, waitFor, waitUntil, withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

type Line = { level: string; message: string; fields?: LogFields };

function record() {
  const lines: Line[] = [];
  const keep = (level: string) => (message: string, fields?: LogFields) => void lines.push({ level, message, fields });
  const logger: Logger = { debug: keep("debug"), info: keep("info"), warn: keep("warn"), error: keep("error") };
  return { lines, logger };
}

/**
 * One use of Redis, open through `url`: `busy` uses it as requests would, and returns once what
 * they asked of Redis is sent, or waits to be (a command the client holds while Redis is away).
 */
type Opened = { busy(): Promise<void>; close(): Promise<void> };
type Use = { use: string; open(url: string, logger: Logger): Promise<Opened> };

const key = () => `test-${process.pid}-${Date.now()}:close`;

const uses: Use[] = [
  {
    use: "event bus",
    async open(url, logger) {
      const bus = await createRedisEventBus(url, `${key()}:`, { logger });
      const heard: unknown[] = [];
      const listen = (runId: string) =>
        void (async () => {
          for await (const frame of bus.events.subscribe("run:output", runId)) heard.push(frame);
        })();
      listen("run1");
      // Listening, as a server with subscribers is: what it publishes comes back to it.
      await waitUntil(async () => {
        bus.events.publish("run:output", "run1", { runId: "run1", spanId: "call", kind: "DELTA", parts: [], final: false });
        await allowTimeFor("the publish to come back", 50);
        return heard.length > 0 || undefined;
      }, 10_000);
      return {
        async busy() {
          listen("run2");
          bus.events.publish("run:output", "run1", { runId: "run1", spanId: "call", kind: "DELTA", parts: [], final: false });
          // The turn's publishes are sent at its end.
          await new Promise((resolve) => setImmediate(resolve));
        },
        close: () => bus.close(),
      };
    },
  },
  {
    use: "rate limits",
    async open(url, logger) {
      const buckets = await RedisTokenBuckets.connect(url, { perMinute: 6_000, burst: 100 }, { logger });
      const bucket = key();
      expect(await buckets.take(bucket)).toEqual({ allowed: true });
      return {
        busy: async () => void buckets.take(bucket).catch(() => undefined),
        close: () => buckets.close(),
      };
    },
  },
];

/** Opens the use through a new fault proxy; closed after the test if the test did not close it. */
async function openThroughProxy({ open }: Use) {
  const proxy = await startFaultProxy(redisUrl!);
  const log = record();
  const opened = await open(proxy.url, log.logger);
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= opened.close());
  cleanups.push(async () => {
    // Bounded: a close that never ends (the defect) must not hold the next test.
    await withTimeout(close(), 5_000).catch(() => undefined);
    await proxy.close();
  });
  return { proxy, log, busy: opened.busy, close };
}

describe.runIf(redisUrl || process.env.CI)("closing Redis's uses while Redis is unreachable", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  for (const use of uses)
    it(`the ${use.use}, closed while Redis refuses connections, never connects again and logs nothing more`, async () => {
      const { proxy, log, busy, close } = await openThroughProxy(use);
      proxy.refuse();
      // Its clients retry, and requests keep using it meanwhile.
      await waitFor(() => proxy.refused >= 3, 10_000);
      await busy();
      await withTimeout(close(), 2_500);
      const linesAtClose = log.lines.length;
      await allowTimeFor("a connection already under way when the close returned", 50);
      const openedAtClose = proxy.opened;

      // ioredis waits 50 ms more before each attempt (up to 2 s): after three, a few hundred ms.
      await allowTimeFor("a reconnection attempt during the outage", 750);
      expect(proxy.opened - openedAtClose).toBe(0);
      proxy.heal();
      await allowTimeFor("a reconnection once Redis is back", 750);
      expect(proxy.opened - openedAtClose).toBe(0);
      expect(proxy.connections).toBe(0);
      expect(log.lines.slice(linesAtClose)).toEqual([]);
    });

  for (const use of uses)
    it(`the ${use.use}, closed while its link to Redis hangs, is closed within seconds and never connects again`, async () => {
      const { proxy, log, busy, close } = await openThroughProxy(use);
      proxy.hang();
      await busy();
      await withTimeout(close(), 2_500);
      const linesAtClose = log.lines.length;
      const openedAtClose = proxy.opened;

      // Redis back: what the hung link held goes through, and the link ends, not to be opened again.
      proxy.heal();
      await waitFor(() => proxy.connections === 0, 5_000);
      await allowTimeFor("a reconnection once Redis is back", 750);
      expect(proxy.opened - openedAtClose).toBe(0);
      expect(proxy.connections).toBe(0);
      expect(log.lines.slice(linesAtClose)).toEqual([]);
    });
});
