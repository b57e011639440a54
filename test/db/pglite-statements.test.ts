// The embedded database plans each statement the Prisma client repeats once (pglite-statements.ts),
// and what the client reads and the errors it reports stay as on PostgreSQL: values of every kind
// Dossier stores, rows written inside a transaction, a unique key's violation and a rollback.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../../src/generated/prisma/client.js";
import type { Database } from "../../src/db/open-database.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

describe.each(backends)("the Prisma client's statements on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend));
    await db.prisma.principal.upsert({ where: { id: "owner" }, create: { id: "owner", name: "Owner" }, update: {} });
  });
  afterAll(() => dispose());

  it("reads values of every kind as they were written", async () => {
    const at = new Date("2026-03-01T10:20:30.456Z");
    const [row] = await db.prisma.$queryRaw<Record<string, unknown>[]>`
      SELECT ${at}::timestamptz AS at, ${JSON.stringify({ a: [1, "two"] })}::jsonb AS doc, ${9007199254740993n}::bigint AS big,
             ${Buffer.from([0, 1, 254, 255])}::bytea AS raw, ${["x", 'y "quoted"', "z,comma"]}::text[] AS list,
             ${true}::boolean AS yes, ${"12.50"}::numeric AS amount, ${null}::text AS nothing, ${"héllo ✓"}::text AS word`;
    expect(row).toEqual({
      at,
      doc: { a: [1, "two"] },
      big: 9007199254740993n,
      raw: new Uint8Array([0, 1, 254, 255]),
      list: ["x", 'y "quoted"', "z,comma"],
      yes: true,
      amount: new Prisma.Decimal("12.50"),
      nothing: null,
      word: "héllo ✓",
    });
  });

  it("writes in a transaction, reports a unique key's violation and rolls back", async () => {
    const workspace = await db.prisma.workspace.create({ data: { ownerId: "owner", title: "Statements", goalVersion: 1 } });
    await db.prisma.goalVersion.create({ data: { workspaceId: workspace.id, version: 1, statement: "first" } });
    const duplicate = db.prisma.$transaction(async (tx) => {
      await tx.workspace.update({ where: { id: workspace.id }, data: { title: "renamed" } });
      await tx.goalVersion.create({ data: { workspaceId: workspace.id, version: 1, statement: "again" } });
    });
    await expect(duplicate).rejects.toMatchObject({ code: "P2002" });
    expect((await db.prisma.workspace.findUniqueOrThrow({ where: { id: workspace.id } })).title).toBe("Statements");
    await db.prisma.$transaction(async (tx) => {
      await tx.workspace.update({ where: { id: workspace.id }, data: { title: "renamed" } });
      await tx.goalVersion.create({ data: { workspaceId: workspace.id, version: 2, statement: "second" } });
    });
    const read = await db.prisma.workspace.findUniqueOrThrow({ where: { id: workspace.id }, include: { goalVersions: { orderBy: { version: "asc" } } } });
    expect([read.title, read.goalVersions.map((goal) => goal.statement)]).toEqual(["renamed", ["first", "second"]]);
  });

  it.runIf(backend === "pglite")("plans a repeated read once, not at every execution", async () => {
    const workspace = await db.prisma.workspace.create({ data: { ownerId: "owner", title: "Planned", goalVersion: 1 } });
    for (let read = 0; read < 12; read++) {
      expect((await db.prisma.workspace.findFirst({ where: { id: workspace.id, ownerId: "owner", deletedAt: null } }))?.title).toBe("Planned");
    }
    const prepared = await db.withSession((session) =>
      session.query<{ statement: string; generic_plans: bigint | number; custom_plans: bigint | number }>(
        `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%"deleted_at" IS NULL%' AND statement LIKE '%FROM "public"."workspace"%'`,
      ),
    );
    expect(prepared).toHaveLength(1);
    // PostgreSQL plans the first executions for their values, then keeps one plan for the rest.
    expect(Number(prepared[0]!.generic_plans)).toBeGreaterThan(0);
    expect(Number(prepared[0]!.custom_plans)).toBeLessThan(12);
  });
});
