// Converting the trace tables to partitioned ones and keeping their week partitions ahead of time
// (PostgreSQL only; see partition-layout.ts for the layout).
//
// Prisma's migrations describe the logical schema, the same on both databases (the drift check
// compares them with prisma/schema.prisma); the partitioning is a physical layer applied after
// them, once, on PostgreSQL. What it changes, which later migrations must respect:
//   - primary keys include `period` (span: (id, period); span_event: (id, period); trace_change:
//     (trace_id, seq, period)): ids stay unique because they are generated unique (cuid/uuid, and a
//     trace's seq is handed out by `trace.last_seq`), not because an index enforces it across weeks;
//   - no foreign key can point at these tables: span.parent_id → span and span_event.span_id → span
//     are gone. Deleting a trace still deletes its spans and replay log (their foreign keys to
//     `trace` cascade) and a trigger on `trace` deletes its spans' events first.
import type { SqlSession } from "../sql-session.js";
import {
  defaultPartition,
  type PartitionedTable,
  PARTITIONED_TABLES,
  partitionName,
  PERIOD_MS,
  periodEnd,
  periodOfPartition,
  periodStart,
  periodsBetween,
  RETAINED_PERIOD,
  retainedPartition,
  WEEKS_AHEAD,
} from "./partition-layout.js";

/** Held (per transaction) by every change to the partitions: one instance at a time. */
export const PARTITION_LOCK_KEY = 72707370;

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function inTransaction<T>(session: SqlSession, work: () => Promise<T>): Promise<T> {
  await session.exec("BEGIN");
  try {
    const result = await work();
    await session.exec("COMMIT");
    return result;
  } catch (error) {
    await session.exec("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

export async function isPartitioned(session: SqlSession, table: PartitionedTable = "span"): Promise<boolean> {
  const [row] = await session.query<{ kind: string | null }>(`SELECT relkind::text AS kind FROM pg_class WHERE oid = to_regclass($1)`, [`public.${table}`]);
  return row?.kind === "p";
}

/** Whether the migrations applied so far created the three tables (a database migrated only part of the way has none). */
async function tablesExist(session: SqlSession): Promise<boolean> {
  const [row] = await session.query<{ all: boolean }>(`SELECT bool_and(to_regclass(n) IS NOT NULL) AS all FROM unnest($1::text[]) n`, [
    PARTITIONED_TABLES.map(({ table }) => `public.${table}`),
  ]);
  return row?.all === true;
}

/** The week partitions of a table, oldest first (neither the retained nor the default one). */
export async function weekPartitions(session: SqlSession, table: PartitionedTable): Promise<{ name: string; start: Date }[]> {
  const rows = await session.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)`,
    [`public.${table}`],
  );
  return rows
    .map((row) => ({ name: row.name, start: periodOfPartition(row.name) }))
    .filter((row): row is { name: string; start: Date } => row.start !== null)
    .sort((a, b) => a.start.getTime() - b.start.getTime());
}

const bounds = (start: Date) => `FROM ('${start.toISOString()}') TO ('${periodEnd(start).toISOString()}')`;

/**
 * Turns the three plain tables into partitioned ones, copying every row into the week its own
 * time falls in, in one transaction (a crash leaves the plain tables as they were). Does nothing
 * when they are partitioned already. Returns the number of rows copied.
 */
export async function partitionTraceTables(session: SqlSession, now: Date = new Date()): Promise<number> {
  if (!(await tablesExist(session)) || (await isPartitioned(session))) return 0;
  return inTransaction(session, async () => {
    await session.query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK_KEY]);
    if (await isPartitioned(session)) return 0;
    await refuseForeignReferences(session);
    const saved = new Map<PartitionedTable, { indexes: string[]; primaryKey: string[]; foreignKeys: string[] }>();
    let copied = 0;
    for (const { table, timeColumn } of PARTITIONED_TABLES) {
      saved.set(table, await definitionsOf(session, table));
      const staging = `${table}_partitioned`;
      await session.exec(
        `CREATE TABLE ${ident(staging)} (LIKE ${ident(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE,
           period timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (period)`,
      );
      const [range] = await session.query<{ oldest: Date | null }>(`SELECT min(${ident(timeColumn)}) AS oldest FROM ${ident(table)}`);
      for (const start of periodsBetween(
        range?.oldest && range.oldest < now ? range.oldest : now,
        new Date(periodStart(now).getTime() + WEEKS_AHEAD * PERIOD_MS),
      )) {
        await session.exec(`CREATE TABLE ${ident(partitionName(table, start))} PARTITION OF ${ident(staging)} FOR VALUES ${bounds(start)}`);
      }
      await session.exec(`CREATE TABLE ${ident(retainedPartition(table))} PARTITION OF ${ident(staging)} FOR VALUES FROM ('${RETAINED_PERIOD}') TO (MAXVALUE)`);
      await session.exec(`CREATE TABLE ${ident(defaultPartition(table))} PARTITION OF ${ident(staging)} DEFAULT`);
      const [count] = await session.query<{ n: number }>(
        `WITH copied AS (INSERT INTO ${ident(staging)} SELECT t.*, t.${ident(timeColumn)} FROM ${ident(table)} t RETURNING 1) SELECT count(*)::int AS n FROM copied`,
      );
      copied += count?.n ?? 0;
    }
    // Dropped together: span_event's foreign key points at span.
    await session.exec(`DROP TABLE ${PARTITIONED_TABLES.map(({ table }) => ident(table)).join(", ")}`);
    for (const { table } of PARTITIONED_TABLES) {
      const definitions = saved.get(table)!;
      await session.exec(`ALTER TABLE ${ident(`${table}_partitioned`)} RENAME TO ${ident(table)}`);
      await session.exec(
        `ALTER TABLE ${ident(table)} ADD CONSTRAINT ${ident(`${table}_pkey`)} PRIMARY KEY (${[...definitions.primaryKey, "period"].map(ident).join(", ")})`,
      );
      for (const statement of [...definitions.indexes, ...definitions.foreignKeys]) await session.exec(statement);
    }
    await session.exec(DELETE_EVENTS_WITH_TRACE);
    return copied;
  });
}

/** A trace's spans go with it (their foreign key cascades); their events, which no key ties to a span any more, go first. */
const DELETE_EVENTS_WITH_TRACE = `
CREATE OR REPLACE FUNCTION dossier_delete_trace_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM span_event WHERE span_id IN (SELECT id FROM span WHERE trace_id = OLD.id);
  RETURN OLD;
END $$;
CREATE TRIGGER trace_delete_events BEFORE DELETE ON trace FOR EACH ROW EXECUTE FUNCTION dossier_delete_trace_events();`;

/** A foreign key from another table into these could not survive: say so rather than drop it. */
async function refuseForeignReferences(session: SqlSession): Promise<void> {
  const names = PARTITIONED_TABLES.map(({ table }) => `public.${table}`);
  const rows = await session.query<{ name: string; owner: string }>(
    `SELECT conname AS name, conrelid::regclass::text AS owner FROM pg_constraint
      WHERE contype = 'f' AND confrelid = ANY (SELECT to_regclass(n) FROM unnest($1::text[]) n)
        AND conrelid <> ALL (SELECT to_regclass(n) FROM unnest($1::text[]) n)`,
    [names],
  );
  if (rows.length > 0) {
    throw new Error(`cannot partition the trace tables: ${rows.map((row) => `${row.owner}.${row.name}`).join(", ")} refers to them`);
  }
}

/** What the partitioned table must get back after the plain one is dropped: its indexes, primary key and foreign keys (those not into the three tables). */
async function definitionsOf(session: SqlSession, table: PartitionedTable) {
  const indexes = await session.query<{ def: string; primary: boolean; unique: boolean; name: string }>(
    `SELECT pg_get_indexdef(indexrelid) AS def, indisprimary AS primary, indisunique AS unique, indexrelid::regclass::text AS name
       FROM pg_index WHERE indrelid = to_regclass($1)`,
    [`public.${table}`],
  );
  const extraUnique = indexes.find((index) => index.unique && !index.primary);
  if (extraUnique) throw new Error(`cannot partition ${table}: its unique index ${extraUnique.name} would have to include the period`);
  const [key] = await session.query<{ columns: string[] }>(
    `SELECT array_agg(a.attname ORDER BY k.ord)::text[] AS columns
       FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
      WHERE c.conrelid = to_regclass($1) AND c.contype = 'p'`,
    [`public.${table}`],
  );
  const foreignKeys = await session.query<{ statement: string }>(
    `SELECT format('ALTER TABLE %I ADD CONSTRAINT %I %s', $2::text, conname, pg_get_constraintdef(oid)) AS statement
       FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'f'
        AND confrelid <> ALL (SELECT to_regclass(n) FROM unnest($3::text[]) n)`,
    [`public.${table}`, table, PARTITIONED_TABLES.map((entry) => `public.${entry.table}`)],
  );
  return {
    indexes: indexes.filter((index) => !index.primary).map((index) => index.def),
    primaryKey: key?.columns ?? [],
    foreignKeys: foreignKeys.map((row) => row.statement),
  };
}

/**
 * Creates the partitions of the current week and the next WEEKS_AHEAD weeks that are missing, and
 * of any week the default partition caught rows of (those rows move into it). Returns the names
 * created.
 */
export async function ensureWeeksAhead(session: SqlSession, now: Date = new Date()): Promise<string[]> {
  const created: string[] = [];
  if (!(await isPartitioned(session))) return created;
  const ahead = periodsBetween(now, new Date(periodStart(now).getTime() + WEEKS_AHEAD * PERIOD_MS));
  for (const { table } of PARTITIONED_TABLES) {
    const existing = new Set((await weekPartitions(session, table)).map((partition) => partition.name));
    const caught = await session.query<{ start: Date }>(
      `SELECT DISTINCT date_trunc('week', period AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start FROM ${ident(defaultPartition(table))} WHERE period <> 'infinity'`,
    );
    for (const start of [...ahead, ...caught.map((row) => new Date(row.start))]) {
      if (existing.has(partitionName(table, start))) continue;
      if (await ensureWeek(session, table, start)) created.push(partitionName(table, start));
      existing.add(partitionName(table, start));
    }
  }
  return created;
}

/**
 * Creates one week's partition on its own and then attaches it, which does not block readers or
 * writers of the table (CREATE … PARTITION OF would); rows the default partition caught for that
 * week move into it first. False when it existed already.
 */
export async function ensureWeek(session: SqlSession, table: PartitionedTable, start: Date): Promise<boolean> {
  const name = partitionName(table, start);
  return inTransaction(session, async () => {
    await session.query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK_KEY]);
    const [present] = await session.query<{ exists: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS exists`, [`public.${name}`]);
    if (present?.exists) return false;
    await session.exec(`CREATE TABLE ${ident(name)} (LIKE ${ident(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`);
    await session.exec(
      `WITH moved AS (DELETE FROM ${ident(defaultPartition(table))}
                       WHERE period >= '${start.toISOString()}' AND period < '${periodEnd(start).toISOString()}' RETURNING *)
       INSERT INTO ${ident(name)} SELECT * FROM moved`,
    );
    await session.exec(`ALTER TABLE ${ident(table)} ATTACH PARTITION ${ident(name)} FOR VALUES ${bounds(start)}`);
    return true;
  });
}
