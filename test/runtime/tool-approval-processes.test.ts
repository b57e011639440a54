// Human approval of tool calls across real processes: a run waits WAITING with no process holding
// it, so its decision may arrive at another instance than the one that started it, and a server
// restart loses nothing; of decisions sent to two instances at once exactly one counts. A
// rejection, an expiry, a cancellation and the deadline end the wait on whichever instance they
// reach, and a waiting run keeps its conversation's slot until then.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { CancelRunDocument, DecideToolCallDocument, RunApprovalsDocument, RunEventsDocument } from "../../sdk/generated/graphql.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { killAll, markerLines, type Spawned, spawnTs, wsSubscriptions } from "../support/processes.js";
import { recordedDecisions, settled } from "../support/scripted-runs.js";
import { idOfType } from "../../src/graphql/global-id.js";
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

async function urlOf(p: Spawned): Promise<string> {
  const line = await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 60_000);
  return (JSON.parse(line) as { url: string }).url;
}

async function clientOf(p: Spawned): Promise<DossierClient> {
  return createClient({ url: await urlOf(p) });
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

const reject = (client: DossierClient, runId: string, toolCallId: string, reason: string) =>
  client.request(DecideToolCallDocument, { input: { runId, toolCallId, decision: "REJECT", reason } }).then((result) => result.decideToolCall);

/** A call's request as stored once decided: a second decision is refused with it. */
async function storedDecision(client: DossierClient, runId: string, toolCallId: string) {
  return expectType(await approve(client, runId, toolCallId), "AlreadyDecidedError").approval;
}

/**
 * The run's status changes as a runEvents subscriber on `server` sees them from now on, repeats
 * folded (a decision and the claim after it both say RUNNING); resolves once the run is terminal.
 * Returns once the server has registered the subscription.
 */
async function statusesSeen(server: string, runId: string): Promise<{ seen: Promise<string[]> }> {
  const client = createClient({ url: server });
  const before = await wsSubscriptions(server);
  const seen = (async () => {
    const statuses: string[] = [];
    for await (const event of { [Symbol.asyncIterator]: () => client.subscribe(RunEventsDocument, { runId }) }) {
      if (statuses.at(-1) !== event.runEvents.status) statuses.push(event.runEvents.status);
    }
    return statuses;
  })();
  await waitUntil(async () => ((await wsSubscriptions(server)) > before ? true : undefined), 10_000);
  return { seen };
}

/** What the model of worker-process.ts read for a declined call, with ECHO_TOOL_RESULT. */
const declinedAnswer = (question: string, pid: number | undefined, reason: string) =>
  new RegExp(
    `^Finished "${question}" by ${pid}\\. Tool said: \\[not executed: the person reviewing tool calls declined this call of "slow_tool"\\. Reason: ${reason}\\.`,
  );

describe("tool approvals across processes", () => {
  it.runIf(backends.includes("postgres") && redisUrl)(
    "on PostgreSQL, decisions sent to two instances at once: one counts, and the call runs once, on the instance with a worker",
    async () => {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const marker = path.join(scratch(), "marker");
      const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: marker };
      const worker = startInstance(common);
      const apiOnly = startInstance({ ...common, IN_PROCESS_WORKER: "false" });
      const [atWorker, atApi] = await Promise.all([clientOf(worker), clientOf(apiOnly)]);

      const { run } = await admit(atWorker, { question: "approve elsewhere" });
      const held = await runIn(atApi, run.id, ["WAITING"]);
      const [approval] = held.pendingApprovals.edges.map((edge) => edge.node);
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
      const database = await createMigratedPostgresDatabase();
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
    expectType(await approve(client, run.id, held.pendingApprovals.edges.map((edge) => edge.node)[0]!.toolCallId), "DecideToolCallSuccess");
    const done = await runIn(client, run.id, ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"]);
    expect(done.answer).toBe(`Finished "wait across a restart" by ${second.child.pid}.`);
    expect(markerLines(marker)).toEqual([`start ${second.child.pid}`, `end ${second.child.pid}`]);
  });

  it.runIf(backends.includes("pglite"))("on PGlite, an approved call cut off by a crash is repaired, never executed a second time", async () => {
    const dir = scratch();
    const marker = path.join(dir, "marker");
    // A generous lease: the embedded database serialises every query, and an attempt stops itself
    // when a busy machine delays its renewal past its own clock.
    const env = { MARKER_FILE: marker, DATA_DIR: path.join(dir, "data"), SLOW_TOOL_MS: "60000", LEASE_MS: "6000" };
    const first = startInstance(env);
    const client = await clientOf(first);
    const { run } = await admit(client, { question: "crash after approval" });
    const held = await runIn(client, run.id, ["WAITING"]);
    expectType(await approve(client, run.id, held.pendingApprovals.edges.map((edge) => edge.node)[0]!.toolCallId), "DecideToolCallSuccess");
    await waitUntil(() => (markerLines(marker).length > 0 ? true : undefined));
    first.child.kill("SIGKILL");
    await first.exited;

    const second = startInstance({ ...env, SLOW_TOOL_MS: "100" });
    const again = await clientOf(second);
    const done = await runIn(again, run.id, ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"]);
    expect(done.answer).toBe(`Finished "crash after approval" by ${second.child.pid}.`);
    expect(markerLines(marker)).toEqual([`start ${first.child.pid}`]);
  });

  it.runIf(backends.includes("postgres") && redisUrl)(
    "on PostgreSQL, a rejection sent to another instance: the call never runs, the model reads the person's reason, the run goes on and ends",
    async () => {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const marker = path.join(scratch(), "marker");
      const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: marker };
      const worker = startInstance({ ...common, ECHO_TOOL_RESULT: "true" });
      const apiOnly = startInstance({ ...common, IN_PROCESS_WORKER: "false" });
      const [atWorker, apiUrl] = await Promise.all([clientOf(worker), urlOf(apiOnly)]);
      const atApi = createClient({ url: apiUrl });

      const { run } = await admit(atWorker, { question: "reject elsewhere" });
      const [approval] = (await runIn(atApi, run.id, ["WAITING"])).pendingApprovals.edges.map((edge) => edge.node);
      const { seen: statuses } = await statusesSeen(apiUrl, run.id);
      const decided = expectType(await reject(atApi, run.id, approval!.toolCallId, "not on a Friday"), "DecideToolCallSuccess");
      expect(decided.approval).toMatchObject({ decision: "REJECT", reason: "not on a Friday" });
      expect(decided.approval.decidedBy).not.toBeNull();

      const done = await settled(atApi, run.id, 45_000);
      expect(done.status).toBe("SUCCEEDED");
      // The instance with the worker went on with the run; its model read the person's reason.
      expect(done.answer).toMatch(declinedAnswer("reject elsewhere", worker.child.pid, "not on a Friday"));
      expect(markerLines(marker)).toEqual([]);
      expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
      expect(await statuses).toEqual(["WAITING", "RUNNING", "SUCCEEDED"]);
      expect(await storedDecision(atWorker, run.id, approval!.toolCallId)).toMatchObject({
        decision: "REJECT",
        reason: "not on a Friday",
        decidedBy: decided.approval.decidedBy,
      });
      // The decision is on the call's span, as the person took it.
      expect(recordedDecisions(done)).toMatchObject([
        { span: "TOOL_CALL", decision: "REJECT", reason: "not on a Friday", decidedBy: idOfType(decided.approval.decidedBy!.id, "Principal") },
      ]);
    },
  );

  it.each(backends)("on %s, a request nobody decides in time is rejected by the sweep, and the run goes on", async (backend) => {
    const dir = scratch();
    const marker = path.join(dir, "marker");
    let env: Record<string, string> = { MARKER_FILE: marker, DATA_DIR: path.join(dir, "data") };
    if (backend === "postgres") {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      env = { MARKER_FILE: marker, DATABASE_URL: database.url };
    }
    const p = startInstance({ ...env, TOOL_APPROVAL_TIMEOUT_SECONDS: "2", ECHO_TOOL_RESULT: "true" });
    const client = await clientOf(p);
    const { run } = await admit(client, { question: "nobody answers" });
    const done = await settled(client, run.id, 45_000);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toMatch(declinedAnswer("nobody answers", p.child.pid, "no decision in time"));
    expect(markerLines(marker)).toEqual([]);
    // The run waited (its first attempt handed it back) until the request expired.
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    const toolCallId = JSON.parse(done.trace!.spans.find((s) => s.kind === "TOOL_CALL")!.attributes)["gen_ai.tool.call.id"] as string;
    const stored = await storedDecision(client, run.id, toolCallId);
    expect(stored).toMatchObject({ decision: "REJECT", reason: "no decision in time", decidedBy: null });
    expect(Date.parse(stored.expiresAt) - Date.parse(stored.requestedAt)).toBe(2_000);
    expect(Date.parse(stored.decidedAt!)).toBeGreaterThanOrEqual(Date.parse(stored.expiresAt));
    expect(recordedDecisions(done)).toMatchObject([{ span: "TOOL_CALL", decision: "REJECT", reason: "no decision in time", decidedBy: null }]);
  });

  it.runIf(backends.includes("postgres") && redisUrl)(
    "on PostgreSQL, a waiting run cancelled on another instance ends at once, never runs its call, and frees its conversation",
    async () => {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const marker = path.join(scratch(), "marker");
      const common = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: marker };
      const worker = startInstance(common);
      const apiOnly = startInstance({ ...common, IN_PROCESS_WORKER: "false" });
      const [workerUrl, atApi] = await Promise.all([urlOf(worker), clientOf(apiOnly)]);
      const atWorker = createClient({ url: workerUrl });

      const { run } = await admit(atWorker, { question: "cancel elsewhere" });
      const [approval] = (await runIn(atApi, run.id, ["WAITING"])).pendingApprovals.edges.map((edge) => edge.node);
      // The instance that started the run hears of the cancellation through Redis.
      const { seen: statuses } = await statusesSeen(workerUrl, run.id);
      const cancelled = await atApi.request(CancelRunDocument, { input: { runId: run.id } });
      expect(expectType(cancelled.cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
      expect(await statuses).toEqual(["WAITING", "CANCELLED"]);
      expect(await storedDecision(atWorker, run.id, approval!.toolCallId)).toMatchObject({
        decision: "REJECT",
        reason: "the run was cancelled",
        decidedBy: null,
      });
      const done = await settled(atWorker, run.id);
      expect(done.trace!.endedAt).not.toBeNull();
      expect(recordedDecisions(done)).toMatchObject([{ span: "TOOL_CALL", decision: "REJECT", reason: "the run was cancelled", decidedBy: null }]);
      expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
      await allowTimeFor("the cancelled run's call to run anyway (it must not)", 1_000);
      expect(markerLines(marker)).toEqual([]);
      expect((await settled(atWorker, run.id)).status).toBe("CANCELLED");

      // Its conversation is free: the next run starts on the instance with a worker.
      const { run: next } = await admit(atApi, { conversationId: run.conversation.id, question: "after the cancelled one" });
      expect((await runIn(atApi, next.id, ["WAITING"])).pendingApprovals.edges.map((edge) => edge.node)).toHaveLength(1);
    },
  );

  it.runIf(backends.includes("postgres"))(
    "on PostgreSQL, a waiting run keeps its conversation's slot until its deadline, which another instance's sweep enforces",
    async () => {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const marker = path.join(scratch(), "marker");
      const env = { DATABASE_URL: database.url, MARKER_FILE: marker };
      const first = startInstance(env);
      const client = await clientOf(first);
      const admittedBefore = Date.now();
      const { run } = await admit(client, { question: "too slow to decide", limits: { deadlineSeconds: 8 } });
      const [approval] = (await runIn(client, run.id, ["WAITING"])).pendingApprovals.edges.map((edge) => edge.node);
      const { run: next } = await admit(client, { conversationId: run.conversation.id, question: "queued behind", multitask: "ENQUEUE" });
      await allowTimeFor("the next run of the conversation to start while the first waits (it must not)", 1_000);
      expect((await runIn(client, next.id, ["QUEUED", "RUNNING", "WAITING"])).status).toBe("QUEUED");
      first.child.kill("SIGKILL");
      await first.exited;

      const second = startInstance(env);
      const again = await clientOf(second);
      const done = await settled(again, run.id, 45_000);
      expect(done.status).toBe("TIMED_OUT");
      expect(Date.parse(done.finishedAt!)).toBeGreaterThanOrEqual(admittedBefore + 8_000);
      expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
      const why = done
        .trace!.spans.flatMap((s) => s.events)
        .filter((e) => e.kind === "INTERRUPTION")
        .map((e) => e.preview);
      expect(why).toContain("the run reached its deadline while it waited for decisions");
      expect(await storedDecision(again, run.id, approval!.toolCallId)).toMatchObject({
        decision: "REJECT",
        reason: "the run reached its deadline",
        decidedBy: null,
      });
      expect(recordedDecisions(done)).toMatchObject([{ span: "TOOL_CALL", decision: "REJECT", reason: "the run reached its deadline", decidedBy: null }]);
      expect(markerLines(marker)).toEqual([]);

      // The slot is free: the queued run starts, on the instance that is left.
      const [held] = (await runIn(again, next.id, ["WAITING"])).pendingApprovals.edges.map((edge) => edge.node);
      expectType(await approve(again, next.id, held!.toolCallId), "DecideToolCallSuccess");
      const after = await settled(again, next.id, 45_000);
      expect(after.answer).toBe(`Finished "queued behind" by ${second.child.pid}.`);
      expect(markerLines(marker)).toEqual([`start ${second.child.pid}`, `end ${second.child.pid}`]);
    },
  );
});
