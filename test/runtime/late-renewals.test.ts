// A lease renewal held on a link that hangs, and delivered once the link heals, extends no lease:
// by then the attempt that sent it has stopped itself by its own clock, so the lease stays as its
// last answered renewal left it and another claim may take the run over a margin after it ends —
// not a whole lease later. With a real fault proxy between the worker and PostgreSQL. The same
// instance takes the run over once the lease has passed, and its new attempt finishes the run.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { createLogger } from "../../src/logger.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { type FaultProxy, startFaultProxy } from "../support/fault-proxy.js";
import { admit } from "../support/fixtures.js";
import { startHeldModel } from "../support/held-model.js";
import { closedAfterEach } from "../support/per-test.js";
import { interceptRawQueries, LEASE_RENEWAL } from "../support/raw-statements.js";
import { startTestApp } from "../support/test-app.js";
import { waitUntil, withTimeout } from "../support/wait.js";

const LEASE_MS = 1_500;
const MARGIN_MS = 300;
const closing = closedAfterEach();

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").replace(/^Run:/, "");

type Row = { lease_expires_at: Date; attempt: number; lease_owner: string | null; status: string };

describe.runIf(backends.includes("postgres"))("a lease renewal held by a link that hangs", () => {
  it("extends nothing once delivered after the attempt stopped itself: the lease ends when its last answered renewal said, and the next attempt finishes the run", async () => {
    const created = await createMigratedPostgresDatabase();
    const sql = new pg.Client({ connectionString: created.url });
    await sql.connect();
    let proxy: FaultProxy | undefined;
    /** Armed: the next renewal hangs the link just as it is sent, and is held on it. */
    let armed = false;
    let held: Promise<unknown> | undefined;
    const database = async () => {
      proxy = await startFaultProxy(created.url);
      // A transaction left idle is ended only after a minute: a write that waits for a lock
      // another of the instance's own transactions holds would stall the run that long.
      const db = await openDatabase({ kind: "postgres", url: proxy.url, timeouts: { idleInTransactionMs: 60_000 } });
      interceptRawQueries(db, (text, _values, send) => {
        if (!armed || !LEASE_RENEWAL.test(text)) return send();
        armed = false;
        proxy!.hang();
        const sent = send();
        held = sent.catch(() => undefined);
        return sent;
      });
      return {
        db,
        dispose: async () => {
          proxy?.heal();
          await db.close();
          await proxy?.close();
          await sql.end();
          await created.drop();
        },
      };
    };
    // Both attempts' requests are held: the first one's until the attempt stops itself, the next
    // one's until its claim was read (answered at once, it could end the run, and clear its lease,
    // between two reads of the row).
    const heldModel = closing(await startHeldModel({ holding: 2 }));
    const logs: { message: string; runId?: string }[] = [];
    const t = closing(
      await startTestApp("postgres", {
        database,
        logger: createLogger("info", (line) => logs.push(JSON.parse(line) as { message: string; runId?: string })),
        runtime: {
          model: heldModel.model,
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-late-renewal-")),
          schedulerPollMs: 3_600_000,
          leaseMs: LEASE_MS,
          leaseMarginMs: MARGIN_MS,
          concurrency: 1,
        },
      }),
    );
    // Closed before the app: a model request still held would hold up its close.
    closing({ close: async () => heldModel.release() });
    const { run } = await admit(t.client, { question: "held through a hung link" });
    const runId = rawId(run.id);
    await waitUntil(() => (heldModel.asked() === 1 ? true : undefined), 20_000, 20);
    const row = async () => (await sql.query<Row>("SELECT lease_expires_at, attempt, lease_owner, status::text FROM run WHERE id = $1", [runId])).rows[0]!;

    // The next renewal is sent into a link that hangs from that moment; the lease is as the last answered one left it.
    armed = true;
    await waitUntil(() => (held ? true : undefined), 2 * LEASE_MS, 5);
    const before = await row();
    expect(before.status).toBe("RUNNING");

    // The attempt stops itself by its own clock, a margin before its lease ends by the database's
    // clock; the link heals then, before any claim may take the run over (a margin after the
    // lease's end), and the held renewal reaches PostgreSQL.
    await waitUntil(() => logs.find((line) => line.runId === runId && /no longer holds the run/.test(line.message)), 3 * LEASE_MS, 5);
    const lateFor = async () =>
      (
        await sql.query<{ late: boolean }>("SELECT now() >= $1::timestamptz - make_interval(secs => $2::double precision / 1000) AS late", [
          before.lease_expires_at,
          MARGIN_MS,
        ])
      ).rows[0]!.late || undefined;
    await waitUntil(lateFor, LEASE_MS, 5);
    proxy!.heal();
    await withTimeout(held!, 5_000);

    // Old: the lease was extended a whole lease from the heal, for an attempt that had stopped.
    expect(await row()).toEqual(before);

    // Taken over (here by the same instance's next claim) once the lease and its margin have
    // passed: within one lease of its end, not two (the claim writes its lease from its own now()).
    const takenOver = await waitUntil(
      async () => {
        const now = await row();
        return now.attempt > before.attempt ? now : undefined;
      },
      3 * LEASE_MS,
      10,
    );
    expect(takenOver.attempt).toBe(before.attempt + 1);
    const claimedAt = takenOver.lease_expires_at.getTime() - LEASE_MS;
    expect(claimedAt).toBeGreaterThanOrEqual(before.lease_expires_at.getTime() + MARGIN_MS);
    expect(claimedAt).toBeLessThan(before.lease_expires_at.getTime() + LEASE_MS);
    heldModel.release();

    // The new attempt finishes the run in well under a second; 5 s is far below the minute a
    // transaction stalled on the instance's own lock would sit idle before PostgreSQL ended it.
    const settled = await waitUntil(async () => {
      const now = await row();
      return now.status === "RUNNING" ? undefined : now;
    }, 5_000);
    expect(settled).toMatchObject({ status: "SUCCEEDED", attempt: before.attempt + 1, lease_owner: null });
    expect(heldModel.asked()).toBe(2);
    const attempts = await sql.query<{ number: number; outcome: string | null }>(
      "SELECT number, outcome::text FROM run_attempt WHERE run_id = $1 ORDER BY number",
      [runId],
    );
    expect(attempts.rows).toEqual([
      { number: before.attempt, outcome: "LEASE_LOST" },
      { number: before.attempt + 1, outcome: "COMPLETED" },
    ]);
    // No transaction of the instance was left waiting on its own session.
    const idle = await sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND xact_start < now() - interval '1 second'",
    );
    expect(idle.rows[0]!.n).toBe(0);
  }, 60_000);
});
