// T5, S2: two server processes on one PostgreSQL and Redis. A run executing on one is watched
// live from the other; what the watcher receives equals the database log.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { RunTraceDocument, TraceUpdatesDocument, type TraceUpdatesSubscription } from "../../sdk/generated/graphql.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function startInstance(env: Record<string, string>): Promise<{ url: string; wsUrl: string; pid: number }> {
  const p = spawnTs("test/support/worker-process.ts", { env });
  running.push(p);
  const line = await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 60_000);
  const { url, pid } = JSON.parse(line) as { url: string; pid: number };
  return { url, wsUrl: url.replace(/^http/, "ws"), pid };
}

describe.runIf(backends.includes("postgres") && redisUrl)("two instances on one PostgreSQL and Redis", () => {
  it("streams a run executing on one instance live to a subscriber of the other", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-two-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: "1500" };
    const executor = await startInstance(common);
    const watcher = await startInstance({ ...common, IN_PROCESS_WORKER: "false" });

    const watching = createClient({ url: watcher.url, wsUrl: watcher.wsUrl });
    const { run } = await admit(watching, { question: "watched from elsewhere" });
    const updates: TraceUpdatesSubscription["traceUpdates"][] = [];
    let sawToolRunningLive = false;
    for await (const { traceUpdates } of watching.subscribe(TraceUpdatesDocument, { runId: run.id })) {
      updates.push(traceUpdates);
      if (traceUpdates.kind === "SPAN_STARTED" && traceUpdates.span?.kind === "TOOL_CALL") {
        // The tool takes 1.5 s: the run is still running on the other instance while we see it.
        const now = (await watching.runTrace(run.id))!;
        sawToolRunningLive = now.status === "RUNNING";
      }
    }
    await watching.close();
    expect(sawToolRunningLive).toBe(true);

    const finished = expectType((await withTimeout(createClient({ url: executor.url }).request(RunTraceDocument, { id: run.id }), 10_000)).node!, "Run");
    expect(finished).toMatchObject({ status: "SUCCEEDED", answer: `Finished "watched from elsewhere" by ${executor.pid}.` });
    const log = expectType(finished.trace!, "Trace").lastSeq;
    expect(updates.map((u) => Number(u.seq))).toEqual(Array.from({ length: Number(log) }, (_, i) => i + 1));
    expect(updates.at(-1)?.kind).toBe("TRACE_ENDED");
  });
});
