// The migration that gives each link its target in the column of its kind fills it for links made
// before it, where the target exists; a link whose target is gone keeps its kind and id only.
import { afterAll, describe, expect, it } from "vitest";
import { readMigrations } from "../../src/db/migrate.js";
import { backends, openTestDatabase } from "../support/databases.js";

const migrations = readMigrations();
const at = migrations.findIndex((migration) => migration.name.endsWith("_link_target_columns"));

describe.each(backends)("links made before their target columns, on %s", (backend) => {
  const disposers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    while (disposers.length) await disposers.pop()!();
  });

  it("get the column of their kind filled, where the target exists", async () => {
    expect(at).toBeGreaterThan(0);
    const opened = await openTestDatabase(backend);
    disposers.push(opened.dispose);
    const { db } = opened;
    await db.migrate(migrations.slice(0, at));
    const sql = (text: string) => db.prisma.$executeRawUnsafe(text);
    await sql(`INSERT INTO principal (id, name) VALUES ('p', 'p')`);
    await sql(`INSERT INTO workspace (id, owner_id, title, goal_version, updated_at) VALUES ('w', 'p', 'Older links', 1, now())`);
    await sql(`INSERT INTO conversation (id, owner_id, title) VALUES ('c', 'p', 'Chat')`);
    await sql(`INSERT INTO publication (id, owner_id, title, latest_version) VALUES ('pub', 'p', 'Report', 1)`);
    await sql(`INSERT INTO workspace_link (id, workspace_id, target_kind, target_id) VALUES
      ('l1', 'w', 'CONVERSATION', 'c'), ('l2', 'w', 'PUBLICATION', 'pub'), ('l3', 'w', 'ARTIFACT', 'gone')`);

    await db.migrate();
    const rows = await db.prisma.$queryRawUnsafe<Record<string, string | null>[]>(
      `SELECT id, conversation_id, run_id, publication_id, artifact_id FROM workspace_link ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: "l1", conversation_id: "c", run_id: null, publication_id: null, artifact_id: null },
      { id: "l2", conversation_id: null, run_id: null, publication_id: "pub", artifact_id: null },
      { id: "l3", conversation_id: null, run_id: null, publication_id: null, artifact_id: null },
    ]);
  });
});
