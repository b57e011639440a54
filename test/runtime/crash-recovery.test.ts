// R7, R17: a process killed between a tool call and its result. The run is taken over from the
// log once its lease expires, its dangling call is repaired, and it completes; the tool never
// runs in two processes at once.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { killAll, markerLines, type Spawned, spawnTs } from "../support/processes.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function startWorker(env: Record<string, string>): Spawned {
  const p = spawnTs("test/support/worker-process.ts", { env });
  running.push(p);
  return p;
}

async function urlOf(p: Spawned): Promise<string> {
  const line = await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 60_000);
  return (JSON.parse(line) as { url: string }).url;
}

/** The run as the surviving process reports it, once settled. */
async function settledRun(url: string, runId: string) {
  const client = createClient({ url });
  return waitUntil(async () => {
    const run = (await client.runTrace(runId))!;
    return ["QUEUED", "RUNNING"].includes(run.status) ? undefined : run;
  }, 45_000);
}

function expectRepairedAndCompleted(run: Awaited<ReturnType<typeof settledRun>>, survivorPid: number) {
  expect(run.status).toBe("SUCCEEDED");
  expect(run.answer).toBe(`Finished "survive a crash" by ${survivorPid}.`);
  expect(run.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "REPAIR", "ASSISTANT"]);
  expect(run.messages.edges[2]!.node.content).toMatch(/may or may not have executed/);
  expect(run.trace!.spans.flatMap((s) => s.events.map((e) => e.kind))).toContain("REPAIR");
  // The killed attempt is recorded as crashed, and its trace left nothing open: one root span,
  // its ATTEMPT and everything under it INTERRUPTED, saying why.
  expect(run.attempts.map((a) => [a.number, a.outcome])).toEqual([
    [1, "CRASHED"],
    [2, "COMPLETED"],
  ]);
  expect(run.attempts[1]!.instance).toContain(`:${survivorPid}:`);
  const spans = run.trace!.spans;
  expect(spans.filter((s) => s.kind === "RUN")).toHaveLength(1);
  expect(spans.filter((s) => s.status === "RUNNING" || !s.endedAt)).toEqual([]);
  const crashed = spans.find((s) => s.id === run.attempts[0]!.span!.id)!;
  expect(crashed.status).toBe("INTERRUPTED");
  expect(crashed.events.find((e) => e.kind === "INTERRUPTION")?.preview).toMatch(/crash|gone|no database session/i);
}

describe("crash recovery", () => {
  const scratch = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-crash-test-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  it.runIf(backends.includes("pglite"))("on PGlite, the restarted process resumes a run killed mid tool call", async () => {
    const dir = scratch();
    // A generous lease: an attempt stops itself when it cannot renew in time, and the embedded
    // database serialises every query, so a busy machine can delay a renewal by seconds.
    const env = { DATA_DIR: path.join(dir, "data"), MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: "60000", LEASE_MS: "6000" };
    const first = startWorker(env);
    const { run } = await admit(createClient({ url: await urlOf(first) }), { question: "survive a crash" });
    await waitUntil(() => (markerLines(env.MARKER_FILE).length > 0 ? true : undefined));
    first.child.kill("SIGKILL");
    await first.exited;

    const second = startWorker({ ...env, SLOW_TOOL_MS: "100" });
    const url = await urlOf(second);
    const done = await settledRun(url, run.id);
    expectRepairedAndCompleted(done, second.child.pid!);
    expect(markerLines(env.MARKER_FILE)).toEqual([`start ${first.child.pid}`]);
  });

  it.runIf(backends.includes("postgres"))("on PostgreSQL, a second running process takes the run over when the lease expires", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = scratch();
    const env = { DATABASE_URL: database.url, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: "60000" };
    // Both at once (the database is migrated already); whichever claims the run is the one killed.
    const processes = [startWorker(env), startWorker(env)];
    const urls = await Promise.all(processes.map(urlOf));
    const { run } = await admit(createClient({ url: urls[0]! }), { question: "survive a crash" });
    const started = await waitUntil(() => markerLines(env.MARKER_FILE)[0]);
    const first = processes.find((p) => started === `start ${p.child.pid}`)!;
    const second = processes.find((p) => p !== first)!;
    // Alive, but the run is leased by the first process: the second must not touch it.
    await allowTimeFor("the second process to start the leased run (it must not)", 500);
    expect(markerLines(env.MARKER_FILE)).toEqual([`start ${first.child.pid}`]);

    first.child.kill("SIGKILL");
    await first.exited;
    const done = await settledRun(urls[processes.indexOf(second)]!, run.id);
    expectRepairedAndCompleted(done, second.child.pid!);
    expect(markerLines(env.MARKER_FILE)).toEqual([`start ${first.child.pid}`]);
  });
});
