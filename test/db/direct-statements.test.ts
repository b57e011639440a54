// Statements sent straight to PostgreSQL (direct-statements.ts) are prepared once per connection,
// as the embedded database's are: PostgreSQL parses such a statement once, not on every call
// (about half of the database's CPU per typical workspace read). A prepared statement must keep
// answering when a migration changes the columns it returns.
import { afterEach, describe, expect, it } from "vitest";
import { preparingOnce, queryRows, statementNames, type NamedStatement } from "../../src/db/direct-statements.js";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { backends, createPostgresDatabase } from "../support/databases.js";

/** Opens a fresh PostgreSQL database with `poolSize` connections; closed and dropped after each test. */
function databasesClosedAfterEach() {
  let db: Database | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await db?.close();
    await drop?.();
    db = undefined;
    drop = undefined;
  });
  return async (poolSize: number) => {
    const created = await createPostgresDatabase();
    drop = created.drop;
    db = await openDatabase({ kind: "postgres", url: created.url, poolSize });
    return db;
  };
}

describe.runIf(backends.includes("postgres"))("direct statements on PostgreSQL", () => {
  const open = databasesClosedAfterEach();

  it("parses a repeated statement once on its connection", async () => {
    const { prisma } = await open(1);
    const read = "SELECT $1::int * 2 AS doubled";
    for (let call = 1; call <= 12; call++) expect(await queryRows(prisma, read, call)).toEqual([{ doubled: call * 2 }]);
    const prepared = await queryRows<{ executions: number }>(
      prisma,
      "SELECT (generic_plans + custom_plans)::int AS executions FROM pg_prepared_statements WHERE statement = $1",
      read,
    );
    expect(prepared).toEqual([{ executions: 12 }]);
  });

  it("keeps answering a prepared `SELECT *` after a column is added to its table", async () => {
    const { prisma } = await open(3);
    await queryRows(prisma, "CREATE TABLE note (id int PRIMARY KEY, body text)");
    await queryRows(prisma, "INSERT INTO note VALUES (1, 'first')");
    const read = "SELECT * FROM note WHERE id = $1";
    // Prepared on every connection of the pool.
    for (let round = 0; round < 3; round++) await Promise.all([1, 1, 1].map((id) => queryRows(prisma, read, id)));
    await queryRows(prisma, "ALTER TABLE note ADD COLUMN pinned boolean NOT NULL DEFAULT false");
    for (let round = 0; round < 3; round++) {
      const rows = await Promise.all([1, 1, 1].map((id) => queryRows(prisma, read, id)));
      expect(rows).toEqual([1, 2, 3].map(() => [{ id: 1, body: "first", pinned: false }]));
    }
  });

  it("still refuses a statement that is wrong, and answers it right once corrected", async () => {
    const { prisma } = await open(1);
    await expect(queryRows(prisma, "SELECT * FROM missing_table")).rejects.toMatchObject({ code: "42P01" });
    await queryRows(prisma, "CREATE TABLE missing_table (id int)");
    expect(await queryRows(prisma, "SELECT * FROM missing_table")).toEqual([]);
  });
});

describe.runIf(backends.includes("postgres"))("Prisma's statements on PostgreSQL", () => {
  const opened = databasesClosedAfterEach();
  const open = async () => {
    const db = await opened(1);
    await db.migrate();
    return db;
  };
  const preparedOn = (prisma: Database["prisma"]) =>
    queryRows<{ statement: string; executions: number }>(
      prisma,
      "SELECT statement, (generic_plans + custom_plans)::int AS executions FROM pg_prepared_statements ORDER BY statement",
    );

  it("parses each of Prisma's statements once on its connection, in a transaction or not; BEGIN and COMMIT go unnamed", async () => {
    const { prisma } = await open();
    const read = () => prisma.principal.findMany({ where: { name: "nobody" }, select: { id: true } });
    for (let call = 0; call < 3; call++) expect(await read()).toEqual([]);
    await prisma.$transaction(async (tx) => {
      await tx.principal.findMany({ where: { name: "nobody" }, select: { id: true } });
      await tx.principal.count({ where: { name: "nobody" } });
    });
    await prisma.$transaction(async (tx) => tx.principal.count({ where: { name: "nobody" } }));
    const prepared = (await preparedOn(prisma)).filter(({ statement }) => statement.includes('"principal"'));
    expect(prepared.map(({ executions }) => executions).sort((a, b) => a - b)).toEqual([2, 4]);
    expect((await preparedOn(prisma)).filter(({ statement }) => /^(BEGIN|COMMIT)/.test(statement))).toEqual([]);
  });

  it("leaves unnamed a text that changes with the size of a list, which would fill the names with statements used once", async () => {
    const { prisma } = await open();
    for (const ids of [["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]])
      expect(await prisma.principal.findMany({ where: { id: { in: ids } } })).toEqual([]);
    await prisma.principal.createMany({ data: [{ name: "one" }, { name: "two" }] });
    const prepared = (await preparedOn(prisma)).map(({ statement }) => statement).filter((statement) => statement.includes('"principal"'));
    // One id is written `= $1` or `IN ($1)`: a text of its own, prepared; the longer lists and the two rows are not.
    expect(prepared).toHaveLength(1);
    expect(prepared[0]).not.toMatch(/\$2/);
  });

  it("answers a prepared `SELECT *` with its new columns after failing once when a migration added one", async () => {
    const { prisma } = await open();
    await queryRows(prisma, "CREATE TABLE note (id int PRIMARY KEY, body text)");
    await queryRows(prisma, "INSERT INTO note VALUES (1, 'first')");
    const read = () => prisma.$transaction((tx) => tx.$queryRawUnsafe("SELECT * FROM note WHERE id = $1", 1));
    for (let call = 0; call < 2; call++) expect(await read()).toEqual([{ id: 1, body: "first" }]);
    await queryRows(prisma, "ALTER TABLE note ADD COLUMN pinned boolean NOT NULL DEFAULT false");
    // Inside a transaction the failing call cannot be sent again; the calls after it are prepared anew.
    await expect(read()).rejects.toThrow(/cached plan must not change result type/);
    for (let call = 0; call < 2; call++) expect(await read()).toEqual([{ id: 1, body: "first", pinned: false }]);
  });
});

describe("statement names", () => {
  it("gives a text the same name on every call, and none past the limit", async () => {
    const sent: NamedStatement[] = [];
    const query = preparingOnce(async (statement) => {
      sent.push(statement);
      return [];
    }, statementNames(2));
    for (const sql of ["a", "b", "a", "c", "b", "c"]) await query(sql, []);
    const names = sent.map((statement) => statement.name);
    expect(names[0]).toBeDefined();
    expect(names[1]).toBeDefined();
    expect(names[0]).not.toBe(names[1]);
    expect(names).toEqual([names[0], names[1], names[0], undefined, names[1], undefined]);
  });
});
