// A worker that stops hands every run in flight back at once, whatever lease renewal of theirs is
// still on its way to the database. A renewal extends only a lease its attempt still holds (the
// run's lease_owner, which the hand-back clears), so one that lands after the hand-back extends
// nothing and another instance resumes the run at once, not a lease later; and one that lands
// after the worker's database was closed writes nothing, logs nothing and fails nothing. On
// PostgreSQL, where another instance may take the run over.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { createLogger } from "../../src/logger.js";
import { backends, createMigratedPostgresDatabase, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { startHeldModel } from "../support/held-model.js";
import { closedAfterEach } from "../support/per-test.js";
import { interceptRawQueries, LEASE_RENEWAL } from "../support/raw-statements.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const LEASE_MS = 6_000;
const closing = closedAfterEach();

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").replace(/^Run:/, "");

/** Lease renewals of `db` as they are sent; while `holding`, each is held on its way until `let go`. */
function heldRenewals(db: Database) {
  const sent: { answered: boolean; failed?: string }[] = [];
  const held: (() => void)[] = [];
  const renewals = { sent, holding: false, held: () => held.length, letGo: () => held.splice(0).forEach((go) => go()) };
  interceptRawQueries(db, (sql, _values, send) => {
    if (!LEASE_RENEWAL.test(sql)) return send();
    const renewal: (typeof sent)[number] = { answered: false };
    sent.push(renewal);
    const onItsWay = renewals.holding ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve();
    return onItsWay.then(send).then(
      (rows) => {
        renewal.answered = true;
        return rows;
      },
      (error: unknown) => {
        renewal.failed = String(error);
        throw error;
      },
    );
  });
  return renewals;
}

/** A worker holding one run in its model request, with its renewals heard (and held when asked). */
async function workerHoldingOneRun(db: Database, logs: { level: string; message: string }[]) {
  // The first request waits until released; any later one (another instance resuming the run) answers at once.
  const held = closing(await startHeldModel({ holding: 1 }));
  closing({ close: async () => held.release() });
  const renewals = heldRenewals(db);
  const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-stopping-"));
  closing({ close: async () => rmSync(sandboxDir, { recursive: true, force: true }) });
  const runtime = {
    model: held.model,
    sandboxDir,
    schedulerPollMs: 3_600_000,
    leaseMs: LEASE_MS,
    concurrency: 1,
  };
  const logger = createLogger("info", (line) => logs.push(JSON.parse(line) as { level: string; message: string }));
  // The test stops this app and closes its database itself, as a stopping process does.
  const t = await startTestApp("postgres", { database: async () => ({ db, dispose: async () => undefined }), logger, runtime });
  // Stopped by the test; stopped here too (once) when an assertion failed before.
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= t.app.stop());
  closing({ close: stop });
  const globalId = (await admit(t.client, { question: "held" })).run.id;
  await waitUntil(() => (held.asked() === 1 ? true : undefined), 20_000, 20);
  // A renewal answered: the attempt's lease is kept as it always is.
  await waitUntil(() => (renewals.sent.some((renewal) => renewal.answered) ? true : undefined), 2 * LEASE_MS, 20);
  // The next renewal is held on its way to the database.
  renewals.holding = true;
  await waitUntil(() => (renewals.held() > 0 ? true : undefined), 2 * LEASE_MS, 10);
  return { t, stop, globalId, runId: rawId(globalId), renewals, runtime };
}

describe.runIf(backends.includes("postgres"))("a lease renewal on its way when its worker stops", () => {
  it("lands after the hand-back and extends no lease: another instance resumes the run at once", async () => {
    const created = await createMigratedPostgresDatabase();
    closing({ close: () => created.drop() });
    const sql = new pg.Client({ connectionString: created.url });
    await sql.connect();
    closing({ close: () => sql.end() });
    const db = await openDatabase({ kind: "postgres", url: created.url });
    let dbClosed: Promise<void> | undefined;
    const closeDb = () => (dbClosed ??= db.close());
    closing({ close: closeDb });
    const logs: { level: string; message: string }[] = [];
    const { stop, globalId, runId, renewals, runtime } = await workerHoldingOneRun(db, logs);
    const row = async () =>
      (
        await sql.query<{ status: string; attempt: number; lease_owner: string | null; expired: boolean }>(
          "SELECT status::text, attempt, lease_owner, lease_expires_at <= now() AS expired FROM run WHERE id = $1",
          [runId],
        )
      ).rows[0]!;
    const stopping = stop();
    // Handed back while the renewal is still on its way; then it reaches the database.
    await waitUntil(async () => ((await row()).lease_owner === null ? true : undefined), 10_000, 10);
    const before = renewals.sent.length;
    renewals.holding = false;
    renewals.letGo();
    await waitUntil(() => (renewals.sent.slice(0, before).every((renewal) => renewal.answered || renewal.failed) ? true : undefined), 10_000, 10);
    await stopping;
    expect(renewals.sent.slice(0, before).map((renewal) => renewal.failed)).toEqual(renewals.sent.slice(0, before).map(() => undefined));
    // Nothing extended: the run is claimable at once, as the hand-back left it.
    expect(await row()).toEqual({ status: "RUNNING", attempt: 1, lease_owner: null, expired: true });
    await closeDb();
    // Another instance claims it as soon as it starts (the row's lease had run out, above).
    const other = closing(
      await startTestApp("postgres", {
        database: async () => {
          const second = await openDatabase({ kind: "postgres", url: created.url });
          return { db: second, dispose: () => second.close() };
        },
        runtime,
      }),
    );
    expect((await settled(other.client, globalId, 30_000)).status).toBe("SUCCEEDED");
    const attempts = await sql.query<{ number: number; outcome: string }>("SELECT number, outcome::text FROM run_attempt WHERE run_id = $1 ORDER BY number", [
      runId,
    ]);
    expect(attempts.rows).toEqual([
      { number: 1, outcome: "HANDED_BACK" },
      { number: 2, outcome: "COMPLETED" },
    ]);
    expect(logs.filter((line) => line.level === "error" || line.level === "warn")).toEqual([]);
  }, 60_000);

  it("reaches the database after it was closed: nothing is written, logged or left failing", async () => {
    const opened = await openMigratedTestDatabase("postgres");
    // Closed by the test, as a stopping process closes it, and once only.
    const close = opened.db.close.bind(opened.db);
    let closed: Promise<void> | undefined;
    opened.db.close = () => (closed ??= close());
    closing({ close: () => opened.dispose() });
    const logs: { level: string; message: string }[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const printed = [vi.spyOn(console, "error"), vi.spyOn(console, "warn")];
    try {
      const { stop, renewals } = await workerHoldingOneRun(opened.db, logs);
      await stop();
      const stoppedLogs = logs.length;
      for (const spy of printed) spy.mockClear();
      await opened.db.close();
      renewals.holding = false;
      renewals.letGo();
      const late = renewals.sent.filter((renewal) => !renewal.answered);
      expect(late.length).toBeGreaterThan(0);
      await waitUntil(() => (late.every((renewal) => renewal.failed) ? true : undefined), 10_000, 10);
      expect(logs.slice(stoppedLogs)).toEqual([]);
      expect(unhandled).toEqual([]);
      expect(printed.flatMap((spy) => spy.mock.calls)).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      for (const spy of printed) spy.mockRestore();
    }
  }, 60_000);
});
