// SIGTERM while the database link hangs: Dossier's processes (the server, with and without its
// in-process worker, and a worker process) reach PostgreSQL through a fault proxy
// (test/support/fault-proxy.ts) that stops forwarding. A shutdown whose steps wait on a database
// that never answers ends at SHUTDOWN_TIMEOUT_MS anyway: the process exits with 1 and says which
// step did not end (the runs it could not hand back are taken over when their lease expires).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SHUTDOWN_TIMEOUT_MS = 3_000;

const processes: { name: string; entry: string; env: Record<string, string>; ready: RegExp }[] = [
  { name: "a server with its in-process worker", entry: "src/main.ts", env: { IN_PROCESS_WORKER: "true" }, ready: /"url":"http:[^"]+"/ },
  { name: "a server that only serves the API", entry: "src/main.ts", env: { IN_PROCESS_WORKER: "false" }, ready: /"url":"http:[^"]+"/ },
  { name: "a worker process", entry: "src/worker-main.ts", env: {}, ready: /worker started/ },
];

describe.runIf(backends.includes("postgres"))("SIGTERM while the database link hangs", () => {
  it.each(processes)(
    "ends $name within SHUTDOWN_TIMEOUT_MS, with 1 and a line naming the step that did not end",
    async ({ entry, env, ready }) => {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const proxy = await startFaultProxy(database.url);
      cleanups.push(() => proxy.close());
      const dir = mkdtempSync(path.join(tmpdir(), "dossier-shutdown-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const process = spawnBuilt(entry, {
        env: { DATABASE_URL: proxy.url, PORT: "0", AUTH_REQUIRED: "false", DATA_DIR: dir, SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), ...env },
      });
      running.push(process);
      await process.waitForOutput(ready, 60_000);

      proxy.hang();
      const signalled = Date.now();
      process.child.kill("SIGTERM");
      const exit = await Promise.race([process.exited, new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), 20_000))]);
      const ms = Date.now() - signalled;
      expect(exit).toEqual({ code: 1, signal: null });
      // The bound, and the time a process takes to write its last lines and exit.
      expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 2_000);
      const line = process
        .output()
        .split("\n")
        .find((text) => text.includes("shutdown did not end in time"));
      expect(JSON.parse(line ?? "{}")).toMatchObject({ level: "error", notStopped: expect.any(String), timeoutMs: SHUTDOWN_TIMEOUT_MS });
    },
    120_000,
  );
});
