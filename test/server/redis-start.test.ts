// A process starting its uses of Redis (the event bus, the rate limits) over a link that connects
// and then hangs, through a fault proxy: the start fails within its bound with an error that says
// Redis does not answer (the process does not start, as when Redis refuses the connection), and
// leaves nothing behind — its connections end once the link heals and none is opened again.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createRedisEventBus, RedisUnavailableError } from "../../src/events/redis-event-target.js";
import { REDIS_CONNECT_TIMEOUT_MS } from "../../src/events/redis-link-log.js";
import { RedisTokenBuckets } from "../../src/server/redis-token-buckets.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { allowTimeFor, waitFor, withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
const running: Spawned[] = [];
afterEach(async () => {
  await killAll(running.splice(0));
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

const CONNECT_TIMEOUT_MS = 1_000;

type Use = { use: string; clients: number; start(url: string): Promise<{ close(): Promise<void> }> };

const uses: Use[] = [
  {
    use: "event bus",
    clients: 2,
    start: (url) => createRedisEventBus(url, `test-${process.pid}-${Date.now()}:`, { connectTimeoutMs: CONNECT_TIMEOUT_MS }),
  },
  {
    use: "rate limits",
    clients: 1,
    start: (url) => RedisTokenBuckets.connect(url, { perMinute: 6_000, burst: 100 }, { connectTimeoutMs: CONNECT_TIMEOUT_MS }),
  },
];

describe.runIf(redisUrl || process.env.CI)("starting Redis's uses over a link that hangs", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  for (const use of uses)
    it(`starting the ${use.use} fails within its bound, says why, and leaves no connection behind`, async () => {
      const proxy = await startFaultProxy(redisUrl!);
      cleanups.push(() => proxy.close());
      proxy.hang();
      const started = use.start(proxy.url);
      // Closed after the test should it have started after all (the old code's start never ended).
      cleanups.push(() =>
        withTimeout(
          started.then((opened) => opened.close()),
          5_000,
        ).catch(() => undefined),
      );

      const failure = await withTimeout(
        started.then(
          () => undefined,
          (error: unknown) => error,
        ),
        CONNECT_TIMEOUT_MS + 2_000,
      );
      expect(failure).toBeInstanceOf(RedisUnavailableError);
      expect((failure as Error).message).toMatch(
        new RegExp(`^Redis (for the rate limits )?at 127\\.0\\.0\\.1:${proxy.port} \\(REDIS_URL\\) is unreachable: no answer within ${CONNECT_TIMEOUT_MS} ms$`),
      );
      // One connection per client, each connected before the link hung its first command.
      expect(proxy.opened).toBe(use.clients);

      await allowTimeFor("a reconnection attempt while the link hangs", 750);
      expect(proxy.opened).toBe(use.clients);
      // Redis back: what the hung link held goes through, the connections end, and none is opened again.
      proxy.heal();
      await waitFor(() => proxy.connections === 0, 5_000);
      await allowTimeFor("a reconnection once Redis is back", 750);
      expect(proxy.opened).toBe(use.clients);
      expect(proxy.connections).toBe(0);
    });

  it.runIf(backends.includes("postgres"))(
    "a server whose Redis link hangs does not start: it exits with the reason within the bound",
    async () => {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const proxy = await startFaultProxy(redisUrl!);
      cleanups.push(() => proxy.close());
      const dir = mkdtempSync(path.join(tmpdir(), "dossier-redis-start-"));
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
      proxy.hang();
      const server = spawnBuilt("src/main.ts", {
        env: { DATABASE_URL: database.url, REDIS_URL: proxy.url, PORT: "0", AUTH_REQUIRED: "false", IN_PROCESS_WORKER: "false", DATA_DIR: dir },
      });
      running.push(server);
      const exited = await withTimeout(server.exited, REDIS_CONNECT_TIMEOUT_MS + 30_000);
      expect(exited.code).toBe(1);
      expect(server.output()).toContain(
        `Dossier could not start.\nRedis at 127.0.0.1:${proxy.port} (REDIS_URL) is unreachable: no answer within ${REDIS_CONNECT_TIMEOUT_MS} ms\n`,
      );
      expect(server.output()).not.toMatch(/"url":"http:/);
      expect(proxy.opened).toBe(2);
    },
    60_000,
  );
});
