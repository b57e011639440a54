// Admissions the database fails for a moment, on PostgreSQL: a statement that outwaits its time (a
// lock held elsewhere, with DB_QUERY_TIMEOUT_MS=2000), a link that hangs, a pool with no free
// connection. The client gets a ServiceUnavailableError in the payload (never a masked internal
// error), nothing of the admission is written, and a retry with the same idempotency key admits
// the run exactly once.
import type pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { AdmitRunDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { unavailableApp } from "../support/unavailable-app.js";
import { whileConnectionHeld } from "../support/held-connection.js";

const INSTANCE = "admission-unavailable";

describe.runIf(backends.includes("postgres"))("admissions the database fails for a moment, on PostgreSQL", () => {
  const h = unavailableApp(INSTANCE);
  afterEach(() => h.close());
  const start = h.start;
  /** The operator's warnings: each failure the client was answered unavailable for, with its cause. */
  const warnings = () => h.logged.filter((entry) => entry.level === "warn");

  const admitWithKey = async (client: DossierClient, key: string, workspaceId?: string) =>
    (await client.request(AdmitRunDocument, { input: { question: `question ${key}`, idempotencyKey: key, workspaceId } })).admitRun;

  /** Rows an admission writes: runs, conversations, idempotency keys, workspace links. */
  async function rows(db: pg.Client) {
    const count = async (table: string) => (await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
    return { runs: await count("run"), conversations: await count("conversation"), keys: await count("idempotency_key"), links: await count("workspace_link") };
  }

  it("10 admissions that outwait a held workspace (DB_QUERY_TIMEOUT_MS=2000) are told to try again, admit nothing, then admit once each", async () => {
    const { client, sql } = await start({ timeouts: { queryMs: 2_000 } });
    const workspace = await createWorkspace(client);
    const before = await rows(sql);
    // A transaction elsewhere holds the workspace row longer than the admissions may wait for it.
    await sql.query("BEGIN");
    await sql.query("SELECT 1 FROM workspace WHERE id = $1 FOR UPDATE", [idOfType(workspace.id, "Workspace")]);
    const keys = Array.from({ length: 10 }, (_, i) => `held-${i}`);
    const answers = await Promise.all(keys.map((key) => admitWithKey(client, key, workspace.id)));
    for (const answer of answers) {
      const unavailable = expectType(answer, "ServiceUnavailableError");
      expect(unavailable.retryAfterSeconds).toBe(1);
      expect(unavailable.message).toMatch(/try again with the same idempotencyKey/i);
    }
    // The operator is told what the client is not: each admission's own cause.
    expect(warnings().map((warning) => warning.message)).toEqual(Array(10).fill("answered unavailable: the database failed for a moment"));
    expect(warnings().every((warning) => /timeout/i.test(warning.error))).toBe(true);
    await sql.query("COMMIT");
    // Nothing the admissions sent goes on to commit once the row is free.
    await h.settled();
    expect(await rows(sql)).toEqual(before);

    const retried = await Promise.all(keys.map((key) => admitWithKey(client, key, workspace.id)));
    const admitted = retried.map((answer) => expectType(answer, "AdmitRunSuccess"));
    expect(admitted.map((answer) => answer.replayed)).toEqual(Array(10).fill(false));
    expect(new Set(admitted.map((answer) => answer.run.id)).size).toBe(10);
    const once = { runs: before.runs + 10, conversations: before.conversations + 10, keys: before.keys + 10, links: before.links + 10 };
    expect(await rows(sql)).toEqual(once);
    // Retried again: the same runs, replayed, and nothing more written.
    const replayed = (await Promise.all(keys.map((key) => admitWithKey(client, key, workspace.id)))).map((answer) => expectType(answer, "AdmitRunSuccess"));
    expect(replayed.map((answer) => [answer.replayed, answer.run.id])).toEqual(admitted.map((answer) => [true, answer.run.id]));
    expect(await rows(sql)).toEqual(once);
  });

  it("an admission whose link hangs is told to try again; its retry with the same key admits the run exactly once", async () => {
    const { client, sql } = await start({ timeouts: { connectMs: 2_000, queryMs: 1_000 } }, true);
    expectType(await admitWithKey(client, "before-the-hang"), "AdmitRunSuccess");
    h.proxy!.hang();
    expectType(await admitWithKey(client, "hung"), "ServiceUnavailableError");
    h.proxy!.heal();
    // What the hung link held may reach the database now: the outcome was unknown to the client.
    await h.settled();
    const retried = expectType(await admitWithKey(client, "hung"), "AdmitRunSuccess");
    const again = expectType(await admitWithKey(client, "hung"), "AdmitRunSuccess");
    expect([again.replayed, again.run.id]).toEqual([true, retried.run.id]);
    const { rows: runs } = await sql.query("SELECT id FROM run WHERE question = 'question hung'");
    expect(runs.map((run) => run.id)).toEqual([idOfType(retried.run.id, "Run")]);
    expect((await rows(sql)).runs).toBe(2);
  });

  it("an admission that finds no free pooled connection in time is told to try again and admits nothing", async () => {
    const { client, db, sql } = await start({ timeouts: { connectMs: 300 }, poolSize: 1 });
    expectType(await admitWithKey(client, "warm-up"), "AdmitRunSuccess");
    const before = await rows(sql);
    // The pool's one connection is busy meanwhile.
    await whileConnectionHeld(db, async () => {
      expectType(await admitWithKey(client, "no-connection"), "ServiceUnavailableError");
      // Without a key the client is told a retry may admit the run twice.
      const unkeyed = (await client.request(AdmitRunDocument, { input: { question: "no key" } })).admitRun;
      expect(expectType(unkeyed, "ServiceUnavailableError").message).toMatch(/Without an idempotencyKey a retry can admit it twice/);
    });
    expect(await rows(sql)).toEqual(before);
    const retried = expectType(await admitWithKey(client, "no-connection"), "AdmitRunSuccess");
    expect(retried.replayed).toBe(false);
    expect((await rows(sql)).runs).toBe(before.runs + 1);
  });
});
