// W4 under concurrency, on PostgreSQL: admissions into one workspace hold its row in share mode,
// so they never wait for each other but do wait for a goal update or an archive in progress —
// and then freeze the goal it committed, or are refused. Replayed with a transaction of our own
// that holds the workspace row as a goal update or an archive would.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdmitRunDocument } from "../../sdk/generated/graphql.js";
import { openDatabase } from "../../src/db/open-database.js";
import { idOfType } from "../../src/domain/global-id.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { allowTimeFor } from "../support/wait.js";

describe.runIf(backends.includes("postgres"))("admission and the workspace row on PostgreSQL", () => {
  let t: TestApp;
  let sql: pg.Client;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const database = await createPostgresDatabase();
    drop = database.drop;
    t = await startTestApp("postgres", {
      database: async () => {
        const db = await openDatabase({ kind: "postgres", url: database.url });
        return { db, dispose: () => db.close() };
      },
    });
    sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
  });
  afterAll(async () => {
    await sql.end();
    await t.close();
    await drop();
  });

  /** Starts `n` admissions into the workspace at once; each settles to its result. */
  const admitMany = (workspaceId: string, n: number) =>
    Array.from({ length: n }, (_, i) =>
      t.client.request(AdmitRunDocument, { input: { workspaceId, question: `question ${i}` } }).then((result) => result.admitRun),
    );

  const settledWithin = async <T>(promises: Promise<T>[], ms: number) => {
    let done = 0;
    for (const promise of promises)
      void promise.then(
        () => (done += 1),
        () => (done += 1),
      );
    await allowTimeFor("admissions to get past the lock (they must wait)", ms);
    return done;
  };

  it("admissions wait for a goal update in progress and freeze the goal it commits, never the one it replaces", async () => {
    const workspace = await createWorkspace(t.client, "Goal one");
    const id = idOfType(workspace.id, "Workspace")!;
    // A goal update in progress: the workspace row is locked for update, a new version written.
    await sql.query("BEGIN");
    await sql.query("SELECT 1 FROM workspace WHERE id = $1 FOR NO KEY UPDATE", [id]);
    await sql.query("INSERT INTO goal_version (id, workspace_id, version, statement) VALUES ($1, $2, 2, 'Goal two')", [`gv-${id}-2`, id]);
    await sql.query("UPDATE workspace SET goal_version = 2 WHERE id = $1", [id]);
    const admissions = admitMany(workspace.id, 10);
    expect(await settledWithin(admissions, 500)).toBe(0);
    await sql.query("COMMIT");
    const results = await Promise.all(admissions);
    expect(results.map((result) => expectType(result, "AdmitRunSuccess").run.frozenGoal?.version)).toEqual(Array(10).fill(2));
  });

  it("admissions wait for an archive in progress and are refused once it commits, admitting nothing", async () => {
    const workspace = await createWorkspace(t.client, "To be archived");
    const id = idOfType(workspace.id, "Workspace")!;
    await sql.query("BEGIN");
    await sql.query("UPDATE workspace SET status = 'ARCHIVED', archived_at = now() WHERE id = $1", [id]);
    const admissions = admitMany(workspace.id, 10);
    expect(await settledWithin(admissions, 500)).toBe(0);
    await sql.query("COMMIT");
    expect((await Promise.all(admissions)).map((result) => result.__typename)).toEqual(Array(10).fill("WorkspaceArchivedError"));
    expect((await sql.query("SELECT count(*)::int AS n FROM run WHERE workspace_id = $1", [id])).rows[0].n).toBe(0);
  });

  it("admissions do not wait for each other: one held open does not stop another", async () => {
    const workspace = await createWorkspace(t.client, "Shared");
    const id = idOfType(workspace.id, "Workspace")!;
    // What an admission in flight holds.
    await sql.query("BEGIN");
    await sql.query("SELECT 1 FROM workspace WHERE id = $1 FOR SHARE", [id]);
    const admissions = admitMany(workspace.id, 5);
    const results = await Promise.all(admissions);
    await sql.query("COMMIT");
    expect(results.map((result) => result.__typename)).toEqual(Array(5).fill("AdmitRunSuccess"));
  });
});
