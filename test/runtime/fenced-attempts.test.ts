// R17, R18 against two real instances on one PostgreSQL and Redis: an attempt that lost its run —
// frozen past its lease (SIGSTOP), or whose heartbeat fails — writes nothing more once it wakes,
// while the instance that took the run over completes it once, with one root span and a clean
// trace; and concurrent admissions into one conversation from both instances run one at a time,
// in order, each answering its own question.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { AdmitRunDocument, CancelRunDocument } from "../../sdk/generated/graphql.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { killAll, markerLines, type Spawned, spawnTs } from "../support/processes.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const p of running) if (p.child.signalCode === null && p.child.exitCode === null) p.child.kill("SIGCONT");
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Instance = { process: Spawned; pid: number; client: DossierClient };

async function deployment(env: Record<string, string>) {
  const database = await createMigratedPostgresDatabase();
  cleanups.push(() => database.drop());
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-fenced-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  // The tool's duration (SLOW_TOOL_MS) in a file the instances read at each call, so a test can
  // shorten the calls made after a moment of its choosing.
  const toolMsFile = path.join(dir, "tool-ms");
  const toolMs = (ms: string) => writeFileSync(toolMsFile, ms);
  toolMs(env.SLOW_TOOL_MS ?? "3000");
  const shared = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS_FILE: toolMsFile, ...env };
  const start = async (): Promise<Instance> => {
    const p = spawnTs("test/support/worker-process.ts", { env: shared });
    running.push(p);
    const { url, pid } = JSON.parse(await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 60_000)) as { url: string; pid: number };
    return { process: p, pid, client: createClient({ url }) };
  };
  // Both at once: the database is migrated already (each instance's own migration finds nothing to do).
  const [first, second] = await Promise.all([start(), start()]);
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  cleanups.push(() => sql.end());
  return { instances: [first, second], sql, marker: shared.MARKER_FILE, toolMs };
}

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").replace(/^Run:/, "");

/** Everything the run's attempts wrote: its row, log, attempts, spans and events. */
async function snapshot(sql: pg.Client, runId: string) {
  const rows = async (text: string) => (await sql.query(text, [runId])).rows;
  return {
    run: await rows("SELECT status, answer, attempt, lease_owner, finished_at FROM run WHERE id = $1"),
    log: await rows("SELECT id, seq, role, content, tool_calls FROM message WHERE run_id = $1 ORDER BY seq"),
    attempts: await rows("SELECT number, instance, outcome, ended_at FROM run_attempt WHERE run_id = $1 ORDER BY number"),
    spans: await rows("SELECT id, kind, name, status, ended_at FROM span WHERE trace_id = $1 ORDER BY started_at, id"),
    events: await rows("SELECT e.id, e.kind, e.payload FROM span_event e JOIN span s ON s.id = e.span_id WHERE s.trace_id = $1 ORDER BY e.id"),
    trace: await rows("SELECT last_seq, ended_at FROM trace WHERE id = $1"),
  };
}

async function settledRun(sql: pg.Client, runId: string, timeoutMs = 45_000) {
  return waitUntil(async () => {
    const { rows } = await sql.query<{ status: string; answer: string | null }>("SELECT status, answer FROM run WHERE id = $1", [runId]);
    return rows[0] && !["QUEUED", "RUNNING"].includes(rows[0].status) ? rows[0] : undefined;
  }, timeoutMs);
}

/** A clean trace of a run taken over once: one root, every span ended, attempt 1 interrupted and saying why. */
function expectCleanTakeover(state: Awaited<ReturnType<typeof snapshot>>, victim: Instance, survivor: Instance, question: string) {
  expect(state.run[0]).toMatchObject({ status: "SUCCEEDED", answer: `Finished "${question}" by ${survivor.pid}.`, lease_owner: null });
  expect(state.attempts.map((a) => [a.number, a.outcome, String(a.instance).split(":")[1]])).toEqual([
    [1, "LEASE_LOST", String(victim.pid)],
    [2, "COMPLETED", String(survivor.pid)],
  ]);
  expect(state.spans.filter((s) => s.kind === "RUN")).toHaveLength(1);
  expect(state.spans.filter((s) => s.kind === "ATTEMPT").map((s) => s.status)).toEqual(["INTERRUPTED", "OK"]);
  expect(state.spans.filter((s) => s.status === "RUNNING" || s.ended_at === null)).toEqual([]);
  expect(state.trace[0]!.ended_at).not.toBeNull();
  const interruption = state.events.find((e) => e.kind === "INTERRUPTION");
  expect(interruption?.payload).toMatch(/lease/i);
  // The log reads as one conversation: the call, its repair note right after it, the answer.
  expect(state.log.map((m) => m.role)).toEqual(["USER", "ASSISTANT", "REPAIR", "ASSISTANT"]);
}

describe.runIf(backends.includes("postgres") && redisUrl)("fenced attempts across two instances", () => {
  it("an instance frozen (SIGSTOP) past its lease writes nothing once it wakes; the other completed the run once", async () => {
    const leaseMs = 3_000;
    const { instances, sql, marker } = await deployment({ LEASE_MS: String(leaseMs), SLOW_TOOL_MS: "4000" });
    const question = "survive a freeze";
    const { run } = await admit(instances[0]!.client, { question });
    const runId = rawId(run.id);
    const started = await waitUntil(() => markerLines(marker)[0]);
    const victim = instances.find((i) => started === `start ${i.pid}`)!;
    const survivor = instances.find((i) => i !== victim)!;
    victim.process.child.kill("SIGSTOP");

    await settledRun(sql, runId);
    const before = await snapshot(sql, runId);
    expectCleanTakeover(before, victim, survivor, question);

    // Woken, the frozen attempt finds it lost the run at its first write or heartbeat, and stops.
    const wokeAt = Date.now();
    victim.process.child.kill("SIGCONT");
    await victim.process.waitForOutput(/attempt stopped: it no longer holds the run and wrote nothing more/, 15_000);
    const gaveUpMs = Date.now() - wokeAt;
    // Whatever it had in flight had its chance to write: it changed nothing. Its timers were
    // overdue and fired as it woke; what it repeats, its heartbeat, beats every leaseMs / 3.
    await allowTimeFor("the woken attempt's calls in flight to write (they must not)", leaseMs / 3 + 500);
    expect(await snapshot(sql, runId)).toEqual(before);
    // The tool started once, in the frozen instance; the survivor resumed with a repair, not a second call.
    expect(markerLines(marker).filter((line) => line.startsWith("start"))).toEqual([`start ${victim.pid}`]);
    console.info(`SIGSTOP takeover: the woken attempt gave up ${gaveUpMs} ms after SIGCONT`);
    expect(gaveUpMs).toBeLessThan(leaseMs);
  }, 120_000);

  it("an attempt whose heartbeat fails stops its tool at once and writes nothing; the run completes once elsewhere", async () => {
    const leaseMs = 3_000;
    const { instances, sql, marker } = await deployment({ LEASE_MS: String(leaseMs), SLOW_TOOL_MS: "60000" });
    const question = "survive a failing heartbeat";
    const { run } = await admit(instances[0]!.client, { question });
    const runId = rawId(run.id);
    const started = await waitUntil(() => markerLines(marker)[0]);
    const victim = instances.find((i) => started === `start ${i.pid}`)!;
    // The database refuses the first attempt's lease renewals from now on.
    await sql.query(`
      CREATE FUNCTION refuse_heartbeat() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.attempt = 1 AND NEW.attempt = 1 AND NEW.status = 'RUNNING'
           AND NEW.lease_owner = OLD.lease_owner AND NEW.lease_expires_at IS DISTINCT FROM OLD.lease_expires_at THEN
          RAISE EXCEPTION 'injected heartbeat failure';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_heartbeat BEFORE UPDATE ON run FOR EACH ROW EXECUTE FUNCTION refuse_heartbeat();`);
    const injectedAt = Date.now();
    await victim.process.waitForOutput(/attempt stopped: it no longer holds the run and wrote nothing more/, 15_000);
    const stoppedMs = Date.now() - injectedAt;
    // The tool was aborted, not left to finish: no "end" line, ever.
    expect(victim.process.output()).toMatch(/injected heartbeat failure/);

    await settledRun(sql, runId);
    const state = await snapshot(sql, runId);
    const survivor = instances.find((i) => state.attempts[1]?.instance.split(":")[1] === String(i.pid))!;
    expect(survivor).toBeDefined();
    expect(state.attempts[0]).toMatchObject({ number: 1, outcome: "LEASE_LOST" });
    expect(state.attempts[1]).toMatchObject({ number: 2, outcome: "COMPLETED" });
    expect(state.run[0]).toMatchObject({ status: "SUCCEEDED", answer: `Finished "${question}" by ${survivor.pid}.` });
    expect(state.spans.filter((s) => s.kind === "RUN")).toHaveLength(1);
    expect(state.spans.filter((s) => s.ended_at === null)).toEqual([]);
    expect(state.log.map((m) => m.role)).toEqual(["USER", "ASSISTANT", "REPAIR", "ASSISTANT"]);
    expect(markerLines(marker)).toEqual([`start ${victim.pid}`]);
    console.info(`heartbeat failure: the attempt stopped ${stoppedMs} ms after renewals began to fail`);
    // The heartbeat beats every leaseMs / 3: the first failing one stops the attempt.
    expect(stoppedMs).toBeLessThan(leaseMs);
  }, 120_000);

  it("a run cancelled while its instance is frozen is released once the lease expires: the conversation goes on, the frozen attempt writes nothing", async () => {
    const leaseMs = 3_000;
    const { instances, sql, marker, toolMs } = await deployment({ LEASE_MS: String(leaseMs), SLOW_TOOL_MS: "4000" });
    const { run } = await admit(instances[0]!.client, { question: "cancel me while frozen" });
    const runId = rawId(run.id);
    const started = await waitUntil(() => markerLines(marker)[0]);
    const victim = instances.find((i) => started === `start ${i.pid}`)!;
    const survivor = instances.find((i) => i !== victim)!;
    victim.process.child.kill("SIGSTOP");
    // The frozen call keeps its 4 s; the follow-up's call needs none of them.
    toolMs("100");
    const cancelled = await survivor.client.request(CancelRunDocument, { input: { runId: run.id } });
    expect(cancelled.cancelRun.__typename).toBe("CancelRunSuccess");

    // The survivor's sweep releases the frozen attempt's lease and the conversation's slot: a follow-up runs.
    const { run: next } = await admit(survivor.client, { conversationId: run.conversation.id, question: "after the cancellation" });
    const followUp = await settledRun(sql, rawId(next.id));
    expect(followUp).toMatchObject({ status: "SUCCEEDED", answer: `Finished "after the cancellation" by ${survivor.pid}.` });
    const before = await snapshot(sql, runId);
    expect(before.run[0]).toMatchObject({ status: "CANCELLED", answer: null, lease_owner: null });
    expect(before.attempts.map((a) => a.outcome)).toEqual(["LEASE_LOST"]);
    expect(before.spans.filter((s) => s.ended_at === null)).toEqual([]);
    expect(before.trace[0]!.ended_at).not.toBeNull();

    victim.process.child.kill("SIGCONT");
    await victim.process.waitForOutput(/attempt stopped/, 15_000);
    await allowTimeFor("the woken attempt's calls in flight to write (they must not)", leaseMs / 3 + 500);
    expect(await snapshot(sql, runId)).toEqual(before);
  }, 120_000);

  it("20 concurrent admissions into one busy conversation from two instances: ENQUEUE runs one at a time in order, REJECT is refused", async () => {
    const { instances, sql, marker } = await deployment({ LEASE_MS: "3000", SLOW_TOOL_MS: "300" });
    const { run: first } = await admit(instances[0]!.client, { question: "first" });
    const conversationId = first.conversation.id;
    await waitUntil(() => markerLines(marker)[0]);

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        instances[i % 2]!.client.request(AdmitRunDocument, {
          input: { conversationId, question: `follow-up ${i}`, multitask: i % 4 < 2 ? "ENQUEUE" : "REJECT" },
        }),
      ),
    );
    const outcomes = results.map((r, i) => [i % 4 < 2 ? "ENQUEUE" : "REJECT", r.admitRun.__typename]);
    expect(outcomes.filter(([mode]) => mode === "ENQUEUE").every(([, type]) => type === "AdmitRunSuccess")).toBe(true);
    const refused = results.flatMap((r) => (r.admitRun.__typename === "ConversationBusyError" ? [r.admitRun] : []));
    expect(refused).toHaveLength(10);
    for (const busy of refused) expect(busy.activeRun?.id).toBeDefined();

    const { rows: runs } = await sql.query<{ id: string }>("SELECT id FROM run ORDER BY created_at, id");
    expect(runs).toHaveLength(11);
    for (const run of runs) await settledRun(sql, run.id, 60_000);
    const { rows: settledRuns } = await sql.query<{ id: string; status: string; question: string; answer: string; attempts: string }>(
      `SELECT r.id, r.status, r.question, r.answer, (SELECT count(*) FROM run_attempt a WHERE a.run_id = r.id) AS attempts
         FROM run r ORDER BY r.created_at, r.id`,
    );
    // Each run answered its own question, on a log holding the previous run's answer.
    settledRuns.forEach((run, i) => {
      expect(run.status).toBe("SUCCEEDED");
      const after = i === 0 ? "" : ` after "${settledRuns[i - 1]!.question}"`;
      expect(run.answer).toMatch(new RegExp(`^Finished "${run.question}" by \\d+${after}\\.$`));
      expect(Number(run.attempts)).toBe(1);
    });
    // No two runs of the conversation overlapped in time.
    const { rows: attempts } = await sql.query<{ started_at: Date; ended_at: Date }>("SELECT started_at, ended_at FROM run_attempt ORDER BY started_at");
    for (let i = 1; i < attempts.length; i += 1) expect(attempts[i]!.started_at >= attempts[i - 1]!.ended_at).toBe(true);
    // One at a time: every tool call ended before the next one started.
    const lines = markerLines(marker);
    expect(lines).toHaveLength(22);
    for (let i = 0; i < lines.length; i += 2) {
      expect(lines[i]).toMatch(/^start /);
      expect(lines[i + 1]).toBe(lines[i]!.replace("start", "end"));
    }
    // The log: each run's entries together, in admission order.
    const { rows: log } = await sql.query<{ run_id: string }>("SELECT run_id FROM message WHERE conversation_id = $1 ORDER BY seq", [
      Buffer.from(conversationId, "base64")
        .toString("utf8")
        .replace(/^Conversation:/, ""),
    ]);
    const order = log.map((m) => m.run_id).filter((id, i, all) => all[i - 1] !== id);
    expect(order).toEqual(settledRuns.map((r) => r.id));
  }, 180_000);
});
