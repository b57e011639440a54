// runsChanged across instances (issue 39): two server processes on one PostgreSQL and Redis. Runs
// start and end on the executing instance; a live list of RUNNING runs on the other hears each
// enter then leave, in commit order, and a subscriber that reconnects with afterSeq continues
// exactly where it left off: what it received in two parts equals a replay of the whole log.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { RunsChangedDocument, type RunsChangedSubscription, type RunsChangedSubscriptionVariables } from "../../sdk/generated/graphql.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { withTimeout } from "../support/wait.js";

type Update = RunsChangedSubscription["runsChanged"];

const redisUrl = inject("redisUrl");
const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function startInstance(env: Record<string, string>): Promise<{ url: string; wsUrl: string }> {
  const p = spawnTs("test/support/worker-process.ts", { env });
  running.push(p);
  const line = await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 60_000);
  const { url } = JSON.parse(line) as { url: string };
  return { url, wsUrl: url.replace(/^http/, "ws") };
}

/** Reads updates until `enough` says so, then leaves. */
async function collect(instance: { url: string; wsUrl: string }, variables: RunsChangedSubscriptionVariables, enough: (updates: Update[]) => boolean) {
  const client = createClient({ url: instance.url, wsUrl: instance.wsUrl });
  const stream = client.subscribe(RunsChangedDocument, variables);
  const updates: Update[] = [];
  try {
    while (!enough(updates)) {
      const next = await withTimeout(stream.next(), 20_000);
      if (next.done) break;
      updates.push(next.value.runsChanged);
    }
  } finally {
    await stream.return?.();
    await client.close();
  }
  return updates;
}

const RUNS = 3;
const RUNNING = { status: ["RUNNING" as const] };
const ended = (updates: Update[]) => updates.filter((u) => u.kind === "REMOVED").length === RUNS;

describe.runIf(backends.includes("postgres") && redisUrl)("runsChanged across two instances on one PostgreSQL and Redis", () => {
  it("hears runs executing on one instance enter and leave a RUNNING list on the other, without a gap across a reconnect", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-list-two-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: "400" };
    const executor = await startInstance(common);
    const watcher = await startInstance({ ...common, IN_PROCESS_WORKER: "false" });

    const admitting = createClient({ url: executor.url });
    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i += 1) runIds.push((await admit(admitting, { question: `listed ${i}` })).run.id);

    // Part one from the start of the log, left after the first run started; part two resumes after it.
    const first = await collect(watcher, { filter: RUNNING, afterSeq: "0" }, (updates) => updates.length === 1);
    const rest = await collect(watcher, { filter: RUNNING, afterSeq: first.at(-1)!.seq }, (updates) => ended([...first, ...updates]));
    const received = [...first, ...rest];
    await admitting.close();

    expect(first[0]?.kind).toBe("ADDED");
    for (const runId of runIds) {
      const kinds = received.filter((u) => u.run?.id === runId).map((u) => u.kind);
      expect(kinds[0]).toBe("ADDED");
      expect(kinds.at(-1)).toBe("REMOVED");
      expect(kinds.filter((kind) => kind === "ADDED")).toHaveLength(1);
      expect(kinds.slice(1, -1).every((kind) => kind === "UPDATED")).toBe(true);
    }
    const seqs = received.map((u) => Number(u.seq));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    // The two parts together are the whole log as a fresh subscriber replays it: nothing lost, nothing twice.
    const replayed = await collect(executor, { filter: RUNNING, afterSeq: "0" }, ended);
    expect(replayed.map((u) => [u.seq, u.kind, u.run?.id])).toEqual(received.map((u) => [u.seq, u.kind, u.run?.id]));
    expect(replayed.every((u) => u.run?.status === "SUCCEEDED")).toBe(true);
  });
});
