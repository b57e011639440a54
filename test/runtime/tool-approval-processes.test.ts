// Human approval of tool calls across real processes: a run waits WAITING with no process holding
// it, so its decision may arrive at another instance than the one that started it, and a server
// restart loses nothing; of decisions sent to two instances at once exactly one counts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { killAll, markerLines, type Spawned, spawnTs } from "../support/processes.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const HOLD_SLOW_TOOL = JSON.stringify({ slow_tool: "always" });

function startInstance(env: Record<string, string>): Spawned {
  const p = spawnTs("test/support/worker-process.ts", { env: { TOOL_APPROVALS: HOLD_SLOW_TOOL, SLOW_TOOL_MS: "100", ...env } });
  running.push(p);
  return p;
}

async function clientOf(p: Spawned): Promise<DossierClient> {
  const line = await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 60_000);
  return createClient({ url: (JSON.parse(line) as { url: string }).url });
}

function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-approval-processes-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function runIn(client: DossierClient, runId: string, statuses: string[]) {
  return waitUntil(async () => {
    const run = expectType((await client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
    return statuses.includes(run.status) ? run : undefined;
  }, 45_000);
}

const approve = (client: DossierClient, runId: string, toolCallId: string) =>
  client.request(DecideToolCallDocument, { input: { runId, toolCallId, decision: "APPROVE" } }).then((result) => result.decideToolCall);

describe("tool approvals across processes", () => {
  it.runIf(backends.includes("postgres") && redisUrl)(
    "on PostgreSQL, decisions sent to two instances at once: one counts, and the call runs once, on the instance with a worker",
    async () => {
      const database = await createPostgresDatabase();
      cleanups.push(() => database.drop());
      const marker = path.join(scratch(), "marker");
      const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: marker };
      const worker = startInstance(common);
      const apiOnly = startInstance({ ...common, IN_PROCESS_WORKER: "false" });
      const [atWorker, atApi] = await Promise.all([clientOf(worker), clientOf(apiOnly)]);

      const { run } = await admit(atWorker, { question: "approve elsewhere" });
      const held = await runIn(atApi, run.id, ["WAITING"]);
      const [approval] = held.pendingApprovals;
      expect(approval!.toolName).toBe("slow_tool");
      await allowTimeFor("the held call to run without a decision (it must not)", 500);
      expect(markerLines(marker)).toEqual([]);

      const results = await Promise.all([approve(atApi, run.id, approval!.toolCallId), approve(atWorker, run.id, approval!.toolCallId)]);
      expect(results.map((result) => result.__typename).sort()).toEqual(["AlreadyDecidedError", "DecideToolCallSuccess"]);
      const done = await runIn(atApi, run.id, ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"]);
      expect(done.status).toBe("SUCCEEDED");
      expect(done.answer).toBe(`Finished "approve elsewhere" by ${worker.child.pid}.`);
      expect(markerLines(marker)).toEqual([`start ${worker.child.pid}`, `end ${worker.child.pid}`]);
    },
  );

  it.each(backends)("on %s, a run waiting across a server restart is decided on the restarted server", async (backend) => {
    const dir = scratch();
    const marker = path.join(dir, "marker");
    let env: Record<string, string> = { MARKER_FILE: marker, DATA_DIR: path.join(dir, "data") };
    if (backend === "postgres") {
      const database = await createPostgresDatabase();
      cleanups.push(() => database.drop());
      env = { MARKER_FILE: marker, DATABASE_URL: database.url };
    }
    const first = startInstance(env);
    const { run } = await admit(await clientOf(first), { question: "wait across a restart" });
    await runIn(await clientOf(first), run.id, ["WAITING"]);
    first.child.kill("SIGKILL");
    await first.exited;

    const second = startInstance(env);
    const client = await clientOf(second);
    await allowTimeFor("the restarted server to resume the undecided run (it must not)", 1_000);
    const held = await runIn(client, run.id, ["WAITING"]);
    expect(markerLines(marker)).toEqual([]);
    expectType(await approve(client, run.id, held.pendingApprovals[0]!.toolCallId), "DecideToolCallSuccess");
    const done = await runIn(client, run.id, ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"]);
    expect(done.answer).toBe(`Finished "wait across a restart" by ${second.child.pid}.`);
    expect(markerLines(marker)).toEqual([`start ${second.child.pid}`, `end ${second.child.pid}`]);
  });

  it.runIf(backends.includes("pglite"))("on PGlite, an approved call cut off by a crash is repaired, never executed a second time", async () => {
    const dir = scratch();
    const marker = path.join(dir, "marker");
    const env = { MARKER_FILE: marker, DATA_DIR: path.join(dir, "data"), SLOW_TOOL_MS: "60000" };
    const first = startInstance(env);
    const client = await clientOf(first);
    const { run } = await admit(client, { question: "crash after approval" });
    const held = await runIn(client, run.id, ["WAITING"]);
    expectType(await approve(client, run.id, held.pendingApprovals[0]!.toolCallId), "DecideToolCallSuccess");
    await waitUntil(() => (markerLines(marker).length > 0 ? true : undefined));
    first.child.kill("SIGKILL");
    await first.exited;

    const second = startInstance({ ...env, SLOW_TOOL_MS: "100" });
    const again = await clientOf(second);
    const done = await runIn(again, run.id, ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"]);
    expect(done.answer).toBe(`Finished "crash after approval" by ${second.child.pid}.`);
    expect(markerLines(marker)).toEqual([`start ${first.child.pid}`]);
  });
});
