// Redis unreachable for a while (an outage, through a fault proxy that refuses every connection):
// Dossier's log says so once per use of Redis — the event bus, the rate limits — naming the
// address and never the URL's password, and says once that Redis is back; ioredis prints no
// "Unhandled error event" line per reconnection attempt. Counts, not timings: the outage lasts
// until the clients have tried to reconnect several times.
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import { keepListening } from "../../src/events/keep-listening.js";
import { type LogFields, type Logger, silentLogger } from "../../src/logger.js";
import { RedisTokenBuckets } from "../../src/server/redis-token-buckets.js";
import { type FaultProxy, startFaultProxy } from "../support/fault-proxy.js";
import { allowTimeFor, waitFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

type Line = { level: string; message: string; fields?: LogFields };

/**
 * A logger that keeps its lines, and the "[ioredis] Unhandled error event" lines ioredis printed
 * with console.error for the clients behind the proxy on `port`. A client of another test file in
 * this process still retrying its proxy would print such lines too, naming its own port: a line
 * naming no address (a read or write reset) or this port can be this test's.
 */
function record(port: number) {
  const lines: Line[] = [];
  const keep = (level: string) => (message: string, fields?: LogFields) => void lines.push({ level, message, fields });
  const logger: Logger = { debug: keep("debug"), info: keep("info"), warn: keep("warn"), error: keep("error") };
  const printed: string[] = [];
  const print = console.error;
  const consoleError = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    const line = args.map(String).join(" ");
    const address = /\d+\.\d+\.\d+\.\d+:(\d+)/.exec(line);
    if (line.includes("[ioredis] Unhandled error event") && (!address || address[1] === String(port))) printed.push(line);
    else print(...args);
  });
  cleanups.push(async () => consoleError.mockRestore());
  const about = (use: string) => lines.filter((line) => line.fields?.use === use);
  return { lines, logger, printed, about };
}

/**
 * A proxy to the test Redis, and its URL with a password: Redis takes any password for a user
 * that has none (the test Redis's default user), and a password the test Redis has is kept.
 */
async function proxyWithPassword(): Promise<{ proxy: FaultProxy; url: string; password: string }> {
  const proxy = await startFaultProxy(redisUrl!);
  cleanups.push(() => proxy.close());
  const url = new URL(proxy.url);
  if (!url.password) {
    url.username ||= "default";
    url.password = "secret-in-the-url";
  }
  return { proxy, url: url.toString(), password: decodeURIComponent(url.password) };
}

/** Refuses connections until the clients have tried to reconnect `attempts` times, then lets them through again. */
async function outage(proxy: FaultProxy, attempts: number) {
  proxy.refuse();
  await waitFor(() => proxy.refused >= attempts, 10_000);
  proxy.heal();
}

describe.runIf(redisUrl || process.env.CI)("a Redis outage in Dossier's logs", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it("the event bus logs the outage once and its end once, with the address and without the password, and ioredis prints nothing", async () => {
    const { proxy, url, password } = await proxyWithPassword();
    const log = record(proxy.port);
    const prefix = `test-${process.pid}-${Date.now()}:outage-logs:`;
    const bus = await createRedisEventBus(url, prefix, { logger: log.logger });
    cleanups.push(() => bus.close());
    const heard: unknown[] = [];
    // Listening again after the outage, as Dossier's listeners do (the bus says what may have been missed).
    const listening = keepListening({
      what: "output",
      subscribe: () => bus.events.subscribe("run:output", "run1"),
      onEvent: (frame) => heard.push(frame),
      logger: silentLogger,
    });
    cleanups.push(() => listening.stop());

    // Both clients (publishing, subscribing) lose their link and retry several times each.
    await outage(proxy, 10);
    // Working again: a publish through the proxy is heard by the subscriber through the proxy.
    await waitUntil(async () => {
      bus.events.publish("run:output", "run1", { runId: "run1", spanId: "call", kind: "DELTA", parts: [], final: false });
      await allowTimeFor("the publish to come back", 50);
      return heard.length > 0 || undefined;
    }, 10_000);
    await expect.poll(() => log.about("event bus").map((line) => line.level), { timeout: 5_000 }).toContain("info");
    await allowTimeFor("a late repeat of either line", 200);

    const lines = log.about("event bus");
    expect(lines.map((line) => line.level)).toEqual(["warn", "info"]);
    for (const line of lines) {
      expect(line.message).toContain(`127.0.0.1:${proxy.port}`);
      expect(line.fields?.redis).toBe(`127.0.0.1:${proxy.port}`);
      expect(JSON.stringify(line)).not.toContain(password);
    }
    expect(lines[0]!.message).toContain("event bus");
    expect(lines[0]!.fields?.error).toEqual(expect.any(String));
    expect(log.printed).toEqual([]);
  });

  it("the rate limits' buckets log the outage once and its end once, and ioredis prints nothing", async () => {
    const { proxy, url, password } = await proxyWithPassword();
    const log = record(proxy.port);
    const buckets = await RedisTokenBuckets.connect(url, { perMinute: 6_000, burst: 100 }, { logger: log.logger });
    cleanups.push(() => buckets.close());
    const key = `test-${process.pid}-${Date.now()}:outage-logs`;
    expect(await buckets.take(key)).toEqual({ allowed: true });

    await outage(proxy, 5);
    await waitUntil(() => buckets.take(key).catch(() => undefined), 10_000);
    await expect.poll(() => log.about("rate limits").map((line) => line.level), { timeout: 5_000 }).toContain("info");
    await allowTimeFor("a late repeat of either line", 200);

    const lines = log.about("rate limits");
    expect(lines.map((line) => line.level)).toEqual(["warn", "info"]);
    for (const line of lines) {
      expect(line.message).toContain(`127.0.0.1:${proxy.port}`);
      expect(JSON.stringify(line)).not.toContain(password);
    }
    expect(lines[0]!.message).toContain("rate limits");
    expect(log.printed).toEqual([]);
  });
});
