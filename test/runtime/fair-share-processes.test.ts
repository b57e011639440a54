// Issue 36, fairness as an operator's deployment sees it: an API server and worker processes on
// one PostgreSQL, joined by the pg-boss run queue. Principal A admits a backlog, then principal B
// admits runs: B's runs start within one run's duration of their admission while A's backlog
// drains, instead of after it (runs used to be claimed oldest first across all principals); with
// keys required and the default cap, at once: A's backlog leaves the worker a slot.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { openDatabase } from "../../src/db/open-database.js";
import { PrincipalService } from "../../src/domain/principal/principal-service.js";
import { createEventBus } from "../../src/events/topics.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { killAll, type Spawned, spawnBuilt, spawnTs } from "../support/processes.js";
import { waitUntil } from "../support/wait.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** How long each run's one tool call takes: most of a run's duration. */
const TOOL_MS = 1_500;

async function deployment(workers: number, env: Record<string, string>) {
  const database = await createPostgresDatabase();
  cleanups.push(() => database.drop());
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-fair-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const shared = { DATABASE_URL: database.url, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: String(TOOL_MS), LOG_LEVEL: "warn", ...env };
  const server = spawnBuilt("src/main.ts", {
    env: { ...shared, LOG_LEVEL: "info", PORT: "0", IN_PROCESS_WORKER: "false", DATA_DIR: path.join(dir, "server") },
  });
  running.push(server);
  const url = (JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url;
  const db = await openDatabase({ kind: "postgres", url: database.url });
  cleanups.push(() => db.close());
  const principals = new PrincipalService({ prisma: db.prisma, events: createEventBus() });
  const client = async (name: string) => {
    const { secret } = await principals.createPrincipal({ name });
    return createClient({ url, headers: { authorization: `Bearer ${secret}` } });
  };
  const [a, b] = [await client("A"), await client("B")];
  for (let i = 0; i < workers; i += 1) {
    const worker = spawnTs("test/support/queue-worker.ts", { env: shared });
    running.push(worker);
    await worker.waitForOutput(/\{"worker":"[^"]+","pid":\d+/, 60_000);
  }
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  cleanups.push(() => sql.end());
  return { a, b, sql };
}

/** Admits `count` runs, ten at a time. */
async function backlog(client: DossierClient, count: number): Promise<void> {
  for (let i = 0; i < count; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, count - i) }, (_, j) => admit(client, { question: `backlog ${i + j}` })));
  }
}

type Timing = { owner: string; question: string; created: Date; started: Date | null; finished: Date | null };

async function timings(sql: pg.Client): Promise<Timing[]> {
  const { rows } = await sql.query<Timing>(
    `SELECT p.name AS owner, r.question, r.created_at AS created, r.started_at AS started, r.finished_at AS finished
       FROM run r JOIN principal p ON p.id = r.owner_id ORDER BY r.created_at`,
  );
  return rows;
}

/**
 * The most attempts of `owner`'s runs that were ever running at once. Attempts, not runs: a run
 * handed back and claimed again keeps its first started_at, so its run row spans the time it
 * waited in the queue while others ran.
 */
async function peakRunning(sql: pg.Client, owner: string): Promise<number> {
  const { rows } = await sql.query<{ started: Date; ended: Date | null }>(
    `SELECT a.started_at AS started, a.ended_at AS ended
       FROM run_attempt a JOIN run r ON r.id = a.run_id JOIN principal p ON p.id = r.owner_id WHERE p.name = $1`,
    [owner],
  );
  const edges = rows
    .flatMap((attempt) => [
      { at: attempt.started.getTime(), delta: 1 },
      { at: (attempt.ended ?? new Date(8.64e15)).getTime(), delta: -1 },
    ])
    .sort((x, y) => x.at - y.at || x.delta - y.delta);
  let now = 0;
  let peak = 0;
  for (const edge of edges) {
    now += edge.delta;
    peak = Math.max(peak, now);
  }
  return peak;
}

/** B admits `count` runs after A's backlog is running; resolves when they all started, with everything's timings. */
async function bAfterA(deployed: Awaited<ReturnType<typeof deployment>>, { backlogSize, count }: { backlogSize: number; count: number }) {
  await backlog(deployed.a, backlogSize);
  // A's runs fill the workers before B asks.
  await waitUntil(async () => (await timings(deployed.sql)).filter((run) => run.finished).length >= 2 || undefined, 60_000);
  for (let i = 0; i < count; i += 1) await admit(deployed.b, { question: `b${i}` });
  const admitted = new Date();
  const runs = await waitUntil(async () => {
    const runs = await timings(deployed.sql);
    return runs.filter((run) => run.owner === "B" && run.started).length === count ? runs : undefined;
  }, 60_000);
  return { runs, admitted };
}

describe.runIf(backends.includes("postgres"))("fair shares of the workers across principals", () => {
  it("A admits 200 runs, then B admits 5: each of B's runs starts within one run's duration while A's backlog drains", async () => {
    const deployed = await deployment(2, { WORKER_CONCURRENCY: "4", MAX_RUNNING_RUNS_PER_PRINCIPAL: "3" });
    const { runs } = await bAfterA(deployed, { backlogSize: 200, count: 5 });

    const aDone = runs.filter((run) => run.owner === "A" && run.finished);
    const durations = aDone.map((run) => run.finished!.getTime() - run.started!.getTime()).sort((x, y) => x - y);
    const runDuration = durations[Math.floor(durations.length / 2)]!;
    expect(runDuration).toBeGreaterThanOrEqual(TOOL_MS);
    const waits = runs.filter((run) => run.owner === "B").map((run) => run.started!.getTime() - run.created.getTime());
    for (const wait of waits) expect(wait).toBeLessThan(runDuration);
    // A's backlog was still there (most of it), and A held its share of the 8 slots, never more.
    expect(runs.filter((run) => run.owner === "A" && !run.started).length).toBeGreaterThan(150);
    expect(await peakRunning(deployed.sql, "A")).toBe(3);
  }, 240_000);

  it("with WORKER_CONCURRENCY=2 and the default cap, A's backlog holds one slot and B's run takes the other", async () => {
    const deployed = await deployment(1, { WORKER_CONCURRENCY: "2" });
    const { runs, admitted } = await bAfterA(deployed, { backlogSize: 40, count: 1 });
    const [bRun] = runs.filter((run) => run.owner === "B");
    // Keys are required: A's backlog never had more than one run running, so B waited for no run of A's to end.
    expect(await peakRunning(deployed.sql, "A")).toBe(1);
    // No claim that began once B's admission had committed took one of A's runs instead of B's.
    const claimedAfterB = runs.filter((run) => run.owner === "A" && run.started && run.started > admitted);
    expect(claimedAfterB.every((run) => run.started! >= bRun!.started!)).toBe(true);
    expect(runs.filter((run) => run.owner === "A" && !run.started).length).toBeGreaterThan(25);
  }, 240_000);
});
