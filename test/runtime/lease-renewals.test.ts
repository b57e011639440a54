// A worker renews the leases of every attempt it holds with one statement per beat, whatever
// their number: attempts claimed at different moments converge to the same beat. What each
// attempt learns from that statement is its own: a run cancelled or taken over meanwhile loses
// its fence while the others keep theirs; a renewal that hangs stops no attempt before its own
// clock says so, and is not sent again per attempt while it hangs.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { createLogger } from "../../src/logger.js";
import { type Backend, backends, createMigratedPostgresDatabase, openMigratedTestDatabase } from "../support/databases.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { admit } from "../support/fixtures.js";
import { startHeldModel } from "../support/held-model.js";
import { closedAfterEach } from "../support/per-test.js";
import { interceptRawQueries, LEASE_RENEWAL } from "../support/raw-statements.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const LEASE_MS = 1_200;
const MARGIN_MS = 240;

type Sent = { sql: string; params: string; at: number };
const closing = closedAfterEach();

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").replace(/^Run:/, "");

/**
 * `count` runs held by one in-process worker, each waiting in its model request until `release`;
 * `statements` hears every statement the app's database answered.
 */
async function heldRuns(backend: Backend, count: number, database?: () => ReturnType<typeof openMigratedTestDatabase>) {
  const statements: Sent[] = [];
  const logs: { message: string; runId?: string; at: number }[] = [];
  const model = closing(await startHeldModel());
  const release = model.release;
  const onQuery = (sql: string, params: string) => statements.push({ sql, params, at: performance.now() });
  const t = closing(
    await startTestApp(backend, {
      database: database ?? (() => openMigratedTestDatabase(backend, { onQuery })),
      logger: createLogger("info", (line) => logs.push({ ...(JSON.parse(line) as { message: string; runId?: string }), at: performance.now() })),
      runtime: {
        model: model.model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-leases-")),
        schedulerPollMs: 3_600_000,
        leaseMs: LEASE_MS,
        leaseMarginMs: MARGIN_MS,
        concurrency: count,
        maxRunningPerPrincipal: count,
      },
    }),
  );
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) ids.push((await admit(t.client, { question: `held ${i}` })).run.id);
  await waitUntil(() => (model.asked() === count ? true : undefined), 20_000, 20);
  const runIds = ids.map(rawId);
  /** The held runs a renewal statement renews. */
  const renewing = (sent: Sent) => runIds.filter((id) => sent.params.includes(id));
  const renewals = (from = 0) => statements.slice(from).filter((sent) => LEASE_RENEWAL.test(sent.sql));
  /** Waits for a renewal of every held run in one statement: the attempts' beats have converged. */
  const converged = () => waitUntil(() => renewals().find((sent) => renewing(sent).length === count), 5_000, 20);
  return { t, ids, runIds, statements, logs, release, renewing, renewals, converged, onQuery };
}

describe.each(backends)("lease renewals on %s", (backend) => {
  it("5 attempts held by one worker are renewed by one statement per beat", async () => {
    const { t, ids, statements, release, renewing, renewals, converged, runIds } = await heldRuns(backend, 5);
    await converged();
    const from = statements.length;
    // Three beats more (a beat every third of the lease).
    await waitUntil(() => (renewals(from).length >= 3 ? true : undefined), 3 * LEASE_MS, 20);
    const sent = renewals(from);
    expect(sent.map((renewal) => renewing(renewal))).toEqual(sent.map(() => runIds));
    // Beats a third of a lease apart, not one per attempt.
    for (let i = 1; i < sent.length; i += 1) expect(sent[i]!.at - sent[i - 1]!.at).toBeGreaterThan(LEASE_MS / 3 - 150);
    release();
    for (const id of ids) expect((await settled(t.client, id)).status).toBe("SUCCEEDED");
  }, 60_000);

  it("a run cancelled and one taken over between two beats lose their own fences; the third keeps its lease and completes", async () => {
    const { t, ids, runIds, statements, logs, release, renewing, renewals, converged } = await heldRuns(backend, 3);
    await converged();
    const [cancelled, takenOver, kept] = runIds as [string, string, string];
    const from = statements.length;
    // Elsewhere, unheard by this worker: a cancellation, and a takeover as another instance's claim makes it.
    await t.app.db.prisma.$executeRawUnsafe(`UPDATE run SET status = 'CANCELLED' WHERE id = $1`, cancelled);
    await t.app.db.prisma.$executeRawUnsafe(
      `UPDATE run SET attempt = attempt + 1, lease_owner = 'elsewhere', lease_expires_at = now() + interval '1 hour' WHERE id = $1`,
      takenOver,
    );
    const stopped = (runId: string, message: RegExp) => logs.find((line) => line.runId === runId && message.test(line.message));
    await waitUntil(() => stopped(cancelled, /the run was cancelled/) && stopped(takenOver, /no longer holds the run/), 5_000, 20);
    const rows = await t.app.db.prisma.$queryRawUnsafe<{ id: string; status: string; lease_owner: string | null }[]>(
      `SELECT id, status::text, lease_owner FROM run`,
    );
    expect(rows.find((row) => row.id === takenOver)).toMatchObject({ status: "RUNNING", lease_owner: "elsewhere" });
    expect(rows.find((row) => row.id === kept)).toMatchObject({ status: "RUNNING" });
    // The statement that told both renewed the three attempts' leases; the kept run's later beats renew it alone.
    await waitUntil(() => renewals(from).find((sent) => renewing(sent).length === 1), 3 * LEASE_MS, 20);
    const sent = renewals(from).map(renewing);
    const alone = sent.findIndex((runs) => runs.length === 1);
    expect(alone).toBeGreaterThan(0);
    expect(sent).toEqual([...sent.slice(0, alone).map(() => runIds), ...sent.slice(alone).map(() => [kept])]);
    release();
    expect((await settled(t.client, ids[2]!)).status).toBe("SUCCEEDED");
    expect(logs.filter((line) => line.runId === kept && /attempt stopped/.test(line.message))).toEqual([]);
  }, 60_000);

  it("a renewal the database refuses for one run stops that run's attempt alone", async () => {
    const { t, ids, runIds, logs, release, converged } = await heldRuns(backend, 3);
    await converged();
    const refused = runIds[1]!;
    await t.app.db.prisma.$executeRawUnsafe(`
      CREATE FUNCTION refuse_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id = '${refused}' AND NEW.lease_expires_at IS DISTINCT FROM OLD.lease_expires_at THEN RAISE EXCEPTION 'renewal refused'; END IF;
        RETURN NEW;
      END $$`);
    await t.app.db.prisma.$executeRawUnsafe("CREATE TRIGGER refuse_renewal BEFORE UPDATE ON run FOR EACH ROW EXECUTE FUNCTION refuse_renewal()");
    const stops = () => logs.filter((line) => /attempt stopped/.test(line.message));
    await waitUntil(() => (stops().length > 0 ? true : undefined), 3 * LEASE_MS, 20);
    // The others' renewals go on meanwhile: they keep their leases past the refused one's clock.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
    expect(stops().map((line) => [line.runId, line.message])).toEqual([[refused, "attempt stopped: it no longer holds the run and wrote nothing more"]]);
    release();
    for (const id of [ids[0]!, ids[2]!]) expect((await settled(t.client, id)).status).toBe("SUCCEEDED");
  }, 60_000);
});

describe.runIf(backends.includes("postgres"))("a run whose row is busy", () => {
  /** `held`, its app's database reached by `url` once opened. */
  async function heldOnPostgres(count: number) {
    let url: string | undefined;
    let onQuery: (sql: string, params: string) => void = () => undefined;
    const database = async () => {
      const opened = await openMigratedTestDatabase("postgres", { onQuery: (sql, params) => onQuery(sql, params) });
      url = opened.url;
      return opened;
    };
    const held = await heldRuns("postgres", count, database);
    onQuery = held.onQuery;
    await held.converged();
    const sql = new pg.Client({ connectionString: url });
    await sql.connect();
    return { held, sql };
  }
  const leaseLeft = async (sql: pg.Client, id: string) =>
    Number((await sql.query<{ ms: string }>("SELECT extract(epoch FROM lease_expires_at - now()) * 1000 AS ms FROM run WHERE id = $1", [id])).rows[0]!.ms);

  /**
   * Lease renewals of the app's sessions waiting for a row lock, as of now: `sql` is inside the
   * transaction holding the lock, where pg_stat_activity keeps its first snapshot unless cleared.
   */
  const renewalsWaitingForRow = async (sql: pg.Client) => {
    await sql.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await sql.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE '%SET lease_expires_at%'",
    );
    return Number(rows[0]!.n);
  };

  it("holds up no other attempt's renewal, and is renewed on its own as soon as its row is free", async () => {
    const { held, sql } = await heldOnPostgres(3);
    const [busy, ...others] = held.runIds as [string, ...string[]];
    try {
      // Another session holds the run's row, as one of its attempt's fenced writes does.
      await sql.query("BEGIN");
      await sql.query("SELECT 1 FROM run WHERE id = $1 FOR NO KEY UPDATE", [busy]);
      const from = held.statements.length;
      // The beat renews the others at once, while the busy run's own renewal waits for its row (a
      // beat answered after `from` may have run before the lock: the waiting renewal is what shows the beat that skipped it).
      await waitUntil(() => held.renewals(from).find((sent) => held.renewing(sent).length === held.runIds.length), 2 * LEASE_MS, 5);
      await waitUntil(async () => ((await renewalsWaitingForRow(sql)) > 0 ? true : undefined), 2 * LEASE_MS, 5);
      for (const id of others) expect(await leaseLeft(sql, id)).toBeGreaterThan(LEASE_MS / 2);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sql.query("COMMIT");
      // Renewed on its own once the row is free (its answer reaches the app just after the row changes).
      await waitUntil(async () => ((await leaseLeft(sql, busy)) > LEASE_MS - 200 ? true : undefined), LEASE_MS / 3, 5);
      await waitUntil(() => held.renewals(from).find((sent) => held.renewing(sent).length === 1 && held.renewing(sent)[0] === busy), LEASE_MS / 3, 5);
    } finally {
      await sql.end();
    }
    held.release();
    for (const id of held.ids) expect((await settled(held.t.client, id)).status).toBe("SUCCEEDED");
    expect(held.logs.filter((line) => /attempt stopped/.test(line.message))).toEqual([]);
  }, 60_000);

  it("keeps its lease while its row is locked again and again without a pause, as back-to-back fenced writes lock it", async () => {
    const { held, sql } = await heldOnPostgres(2);
    const [busy] = held.runIds as [string];
    let writing = true;
    // Fenced writes one after the other, each holding the run's row for a few milliseconds.
    const writes = (async () => {
      while (writing) {
        await sql.query("BEGIN");
        await sql.query("SELECT 1 FROM run WHERE id = $1 FOR NO KEY UPDATE", [busy]);
        await sql.query("SELECT pg_sleep(0.005)");
        await sql.query("COMMIT");
      }
    })();
    try {
      await new Promise((resolve) => setTimeout(resolve, 4 * LEASE_MS));
      writing = false;
      await writes;
      expect(held.logs.filter((line) => /attempt stopped/.test(line.message))).toEqual([]);
      expect(await leaseLeft(sql, busy)).toBeGreaterThan(0);
    } finally {
      writing = false;
      await writes.catch(() => undefined);
      await sql.end();
    }
    held.release();
    for (const id of held.ids) expect((await settled(held.t.client, id)).status).toBe("SUCCEEDED");
  }, 60_000);
});

describe.runIf(backends.includes("postgres"))("a renewal that hangs", () => {
  it("is sent once for every held attempt, and stops none before its own clock says so", async () => {
    let proxy: Awaited<ReturnType<typeof startFaultProxy>> | undefined;
    const sends: { at: number; runs: string; answered?: number }[] = [];
    let onQuery: (sql: string, params: string) => void = () => undefined;
    const database = async () => {
      const created = await createMigratedPostgresDatabase();
      proxy = await startFaultProxy(created.url);
      const db = await openDatabase({ kind: "postgres", url: proxy.url }, { onQuery: (sql, params) => onQuery(sql, params) });
      // Renewals as they are sent (the statement log hears them only once answered).
      interceptRawQueries(db, (sql, values, send) => {
        if (!LEASE_RENEWAL.test(sql)) return send();
        const sent: (typeof sends)[number] = { at: performance.now(), runs: JSON.stringify(values[0]) };
        sends.push(sent);
        return send().then((rows) => {
          sent.answered = performance.now();
          return rows;
        });
      });
      return {
        db,
        dispose: async () => {
          proxy?.heal();
          await db.close();
          await proxy?.close();
          await created.drop();
        },
      };
    };
    const held = await heldRuns("postgres", 5, database);
    onQuery = held.onQuery;
    await held.converged();
    // Right after a renewal of all five was answered, the link hangs.
    const last = await waitUntil(
      () => {
        const answered = sends.filter((sent) => sent.answered !== undefined && held.runIds.every((id) => sent.runs.includes(id)));
        return answered.length >= 2 ? answered.at(-1) : undefined;
      },
      5_000,
      5,
    );
    proxy!.hang();
    const hungAt = performance.now();
    const stops = () => held.runIds.map((id) => held.logs.find((line) => line.runId === id && /no longer holds the run/.test(line.message)));
    const stopped = await waitUntil(() => (stops().every(Boolean) ? stops() : undefined), 3 * LEASE_MS, 10);
    // Each attempt stopped by its own clock: lease − margin after its last answered renewal was sent, not before.
    for (const stop of stopped) {
      expect(stop!.at).toBeGreaterThanOrEqual(last.at + LEASE_MS - MARGIN_MS - 20);
      expect(stop!.at).toBeLessThan(last.at + LEASE_MS);
    }
    // While the link hung, one renewal was sent for all five attempts, not one per attempt.
    const hung = sends.filter((sent) => sent.at >= hungAt);
    expect(hung.map((sent) => held.runIds.filter((id) => sent.runs.includes(id)))).toEqual([held.runIds]);
    proxy!.heal();
  }, 60_000);
});
