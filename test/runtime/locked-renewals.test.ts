// A lease renewal that waits for its run's row — locked by a transaction whose link hung — is
// judged when it gets the row, not when it was sent: once less than the margin is left of the
// lease by then (the attempt has stopped itself by its own clock), it extends nothing, and
// another claim may take the run over a margin after the lease ends, not a whole lease later.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { startHeldModel } from "../support/held-model.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const LEASE_MS = 1_500;
const MARGIN_MS = 300;
const closing = closedAfterEach();

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").replace(/^Run:/, "");

describe.runIf(backends.includes("postgres"))("a lease renewal that waits for its run's row", () => {
  it("extends nothing when it gets the row with less than the margin left", async () => {
    const created = await createMigratedPostgresDatabase();
    closing({ close: () => created.drop() });
    const sql = new pg.Client({ connectionString: created.url });
    await sql.connect();
    // The row is held on one session; the others are watched from another (a transaction sees one
    // snapshot of pg_stat_activity).
    const watcher = new pg.Client({ connectionString: created.url });
    await watcher.connect();
    closing({ close: () => Promise.all([sql.end(), watcher.end()]) });
    const held = closing(await startHeldModel());
    const t = closing(
      await startTestApp("postgres", {
        database: async () => {
          const db = await openDatabase({ kind: "postgres", url: created.url });
          return { db, dispose: () => db.close() };
        },
        runtime: {
          model: held.model,
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-locked-renewal-")),
          schedulerPollMs: 3_600_000,
          leaseMs: LEASE_MS,
          leaseMarginMs: MARGIN_MS,
          concurrency: 1,
        },
      }),
    );
    closing({ close: async () => held.release() });
    const runId = rawId((await admit(t.client, { question: "a row held elsewhere" })).run.id);
    await waitUntil(() => (held.asked() === 1 ? true : undefined), 20_000, 20);

    // Another session holds the run's row; the worker's renewal skips it, then waits for it alone.
    await sql.query("BEGIN");
    const { rows } = await sql.query<{ lease_expires_at: Date }>("SELECT lease_expires_at FROM run WHERE id = $1 FOR UPDATE", [runId]);
    const leaseEnd = rows[0]!.lease_expires_at;
    const waiting = async () =>
      (
        await watcher.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%WITH held AS%'",
        )
      ).rows[0]!.n > 0 || undefined;
    await waitUntil(waiting, 2 * LEASE_MS, 10);
    // Held until less than the margin is left of the lease by the database's clock.
    await waitUntil(
      async () =>
        (
          await sql.query<{ late: boolean }>("SELECT clock_timestamp() >= $1::timestamptz - make_interval(secs => $2::double precision / 1000) AS late", [
            leaseEnd,
            MARGIN_MS,
          ])
        ).rows[0]!.late || undefined,
      2 * LEASE_MS,
      5,
    );
    await sql.query("COMMIT");
    await waitUntil(async () => ((await waiting()) ? undefined : true), 5_000, 10);

    // Old: the renewal, judged by its statement's start, pushed the lease a whole lease on.
    const after = await sql.query<{ lease_expires_at: Date; attempt: number }>("SELECT lease_expires_at, attempt FROM run WHERE id = $1", [runId]);
    expect(after.rows[0]!.attempt).toBe(1);
    expect(after.rows[0]!.lease_expires_at.getTime()).toBe(leaseEnd.getTime());
  }, 60_000);
});
