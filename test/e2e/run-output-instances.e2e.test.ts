// runOutput across instances (S2): two server processes on one PostgreSQL and Redis. A run's model
// streams on one; subscribers of the other see its output live, and one who joins mid-answer gets
// the text so far from the executing instance, in one TEXT_DELTA, then the live deltas.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { RunOutputDocument, type RunOutputSubscription, RunTraceDocument } from "../../sdk/generated/graphql.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { withTimeout } from "../support/wait.js";

type Update = RunOutputSubscription["runOutput"];

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

async function collect(stream: AsyncIterableIterator<{ runOutput: Update }>, until: (updates: Update[]) => boolean = () => false) {
  const updates: Update[] = [];
  for (;;) {
    const next = await withTimeout(stream.next(), 20_000);
    if (next.done) return { updates, completed: true };
    updates.push(next.value.runOutput);
    if (until(updates)) return { updates, completed: false };
  }
}

const textOf = (updates: readonly Update[]) => updates.flatMap((u) => (u.kind === "TEXT_DELTA" ? [u.text] : [])).join("");

describe.runIf(backends.includes("postgres") && redisUrl)("runOutput across two instances on one PostgreSQL and Redis", () => {
  it("streams a model call executing on one instance to subscribers of the other, a late joiner included", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-output-two-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: "200", STREAM_MS: "2000" };
    const executor = await startInstance(common);
    const watcher = await startInstance({ ...common, IN_PROCESS_WORKER: "false" });

    const watching = createClient({ url: watcher.url, wsUrl: watcher.wsUrl });
    const question = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ");
    const { run } = await admit(watching, { question });
    const early = watching.subscribe(RunOutputDocument, { runId: run.id });
    const beforeJoin = await collect(early, (updates) => textOf(updates).length > 0);

    const joining = createClient({ url: watcher.url, wsUrl: watcher.wsUrl });
    const joiner = joining.subscribe(RunOutputDocument, { runId: run.id });
    const joined = await collect(joiner);
    const rest = await collect(early);
    await Promise.all([watching.close(), joining.close()]);

    const finished = expectType((await withTimeout(createClient({ url: executor.url }).request(RunTraceDocument, { id: run.id }), 10_000)).node!, "Run");
    const answer = `Finished "${question}" by ${executor.pid}.`;
    expect(finished).toMatchObject({ status: "SUCCEEDED", answer });
    expect(textOf([...beforeJoin.updates, ...rest.updates])).toBe(answer);
    expect(rest.completed && joined.completed).toBe(true);
    expect(textOf(joined.updates)).toBe(answer);
    // The joiner came mid-answer: its first delta is the text so far, a part of the answer, and live ones follow.
    const deltas = joined.updates.filter((u) => u.kind === "TEXT_DELTA");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas[0]!.text!.length).toBeGreaterThan(0);
    expect(deltas[0]!.text!.length).toBeLessThan(answer.length);
    for (const updates of [joined.updates, rest.updates]) expect(updates.at(-1)?.kind).toBe("RUN_DONE");
  });
});
