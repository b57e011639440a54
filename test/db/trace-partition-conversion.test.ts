// The migration path of existing trace data to week partitions (PostgreSQL): a database whose
// trace tables are plain, holding traces written over ten weeks, is converted when Dossier
// migrates it; every row is kept, in the week its own time falls in, with the indexes reads by
// trace id use on every partition; deleting a trace still deletes its spans, events and replay
// log. The embedded database keeps plain tables.
import { describe, expect, it } from "vitest";
import { migrate } from "../../src/db/migrate.js";
import { periodStart } from "../../src/db/trace-partitions/partition-layout.js";
import { isPartitioned, partitionTraceTables } from "../../src/db/trace-partitions/partition-tables.js";
import { backends, openMigratedTestDatabase, openTestDatabase } from "../support/databases.js";
import { RECORDS_PER_TRACE, seedTracesSql } from "../support/trace-seed.js";

const TRACES = 40;

describe.runIf(backends.includes("postgres"))("partitioning existing trace tables on PostgreSQL", () => {
  it(`moves ${TRACES * RECORDS_PER_TRACE} records of ten weeks into their weeks' partitions, once, keeping every row and index`, async () => {
    const { db, dispose } = await openTestDatabase("postgres");
    try {
      // Migrated as a database of an earlier Dossier was: plain tables, with traces in them.
      await db.withSession((session) => migrate(session));
      expect(await db.withSession((session) => isPartitioned(session))).toBe(false);
      await db.withSession((session) => session.exec(seedTracesSql(TRACES)));
      const snapshot = () =>
        db.prisma.$queryRawUnsafe<{ spans: string; events: string; changes: string }[]>(
          `SELECT (SELECT md5(string_agg(concat_ws('|', id, trace_id, parent_id, kind, name, status, attributes, usage, started_at, ended_at), ',' ORDER BY id)) FROM span) AS spans,
                  (SELECT md5(string_agg(concat_ws('|', id, span_id, seq, kind, payload, preview, payload_size, at), ',' ORDER BY id)) FROM span_event) AS events,
                  (SELECT md5(string_agg(concat_ws('|', trace_id, seq, type, span_id, event_id, span_after, at), ',' ORDER BY trace_id, seq)) FROM trace_change) AS changes`,
        );
      const before = await snapshot();

      // Dossier's start: the migrations (nothing pending), then the partitioning.
      await db.migrate();
      expect(await db.withSession((session) => isPartitioned(session))).toBe(true);
      expect(await snapshot()).toEqual(before);
      // Each row sits in the week of its own time.
      const misplaced = await db.prisma.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM (
           SELECT tableoid::regclass::text AS p, started_at AS t FROM span UNION ALL
           SELECT tableoid::regclass::text, at FROM span_event UNION ALL
           SELECT tableoid::regclass::text, at FROM trace_change) r
          WHERE r.p !~ ('_p' || to_char(date_trunc('week', r.t AT TIME ZONE 'UTC'), 'YYYYMMDD') || '$')`,
      );
      expect(misplaced[0]!.n).toBe(0);
      const weeks = await db.prisma.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(DISTINCT tableoid)::int AS n FROM span WHERE started_at < $1`,
        periodStart(new Date()),
      );
      expect(weeks[0]!.n).toBeGreaterThanOrEqual(10);
      // Every partition has the index reads by trace id (or span id) use.
      const unindexed = await db.prisma.$queryRawUnsafe<{ partition: string }[]>(
        `SELECT c.relname AS partition FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent IN ('span'::regclass, 'span_event'::regclass)
            AND NOT EXISTS (SELECT 1 FROM pg_indexes x WHERE x.tablename = c.relname AND x.indexdef ~ '\\((trace_id, started_at|span_id, seq)\\)')`,
      );
      expect(unindexed).toEqual([]);
      // Converting again does nothing.
      expect(await db.withSession((session) => partitionTraceTables(session))).toBe(0);

      // Deleting a trace deletes its spans, their events and its replay log.
      await db.prisma.$executeRawUnsafe(`DELETE FROM trace WHERE id = 'r1'`);
      const [left] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(
        `SELECT ((SELECT count(*) FROM span WHERE trace_id = 'r1') + (SELECT count(*) FROM span_event WHERE span_id LIKE 's1\\_%')
                + (SELECT count(*) FROM trace_change WHERE trace_id = 'r1'))::int AS n`,
      );
      expect(left!.n).toBe(0);
    } finally {
      await dispose();
    }
  }, 180_000);
});

describe("the embedded database", () => {
  it("keeps plain trace tables (it expires traces in batches)", async () => {
    const { db, dispose } = await openMigratedTestDatabase("pglite");
    try {
      expect(await db.withSession((session) => isPartitioned(session))).toBe(false);
    } finally {
      await dispose();
    }
  }, 60_000);
});
