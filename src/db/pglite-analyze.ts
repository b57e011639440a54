// The embedded database's planner statistics. PGlite runs no autovacuum, so nothing else refreshes
// them, and its per-table activity counters (which tell autovacuum how many rows changed) are off
// to keep its memory small (open-database.ts). A table's size on disk tells instead: PGlite never
// vacuums, so inserted rows and the new versions of updated ones all add pages. Every few seconds
// one statement compares each table's pages now with those its last ANALYZE saw (pg_class.relpages),
// and only a table that grew past autovacuum-like bounds is analysed, one at a time, each ANALYZE
// holding the one connection as long as its sample takes (30,000 rows at most). The planner scales
// a table's row count by its current pages by itself, but its column statistics (distinct values,
// most common values, histograms) stay as the last ANALYZE left them: made on an empty table, a
// turn's statements kept plans for an empty table while it grew to thousands of rows.
// A full ANALYZE every few minutes catches what changes without growing (deleted rows), and is
// skipped when nothing was written since the last: an idle server analyses nothing.
import type { SqlSession } from "./sql-session.js";

/** A table is analysed again once its pages exceed this share of those its last ANALYZE saw... */
const GROWTH_FACTOR = 1.2;
/** ...plus these: small tables are not analysed for every page of rows. */
const GROWTH_PAGES = 2;
/** A partitioned table (no pages of its own) once its partitions' rows exceed its own by the factor and these. */
const GROWTH_ROWS = 50;

/**
 * The user tables that grew since their last ANALYZE. A partitioned table's statistics are gathered
 * only by an ANALYZE of the table itself (each partition is analysed as a table of its own): its
 * rows as its last ANALYZE counted them against the sum of its partitions' as theirs did.
 */
const GROWN_TABLES = `
SELECT format('%I.%I', n.nspname, c.relname) AS name, c.relkind = 'p' AS partitioned
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL (
  SELECT CASE WHEN c.relkind = 'r' THEN pg_relation_size(c.oid) / current_setting('block_size')::int END AS pages,
         CASE WHEN c.relkind = 'p' THEN (
           SELECT coalesce(sum(greatest(part.reltuples, 0)), 0) FROM pg_partition_tree(c.oid) tree
           JOIN pg_class part ON part.oid = tree.relid WHERE tree.isleaf) END AS partition_rows
) size
WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
  AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
  AND CASE WHEN c.relkind = 'r'
        THEN size.pages > 0 AND (c.reltuples < 0 OR size.pages > c.relpages * ${GROWTH_FACTOR} + ${GROWTH_PAGES})
        ELSE size.partition_rows > greatest(c.reltuples, 0) * ${GROWTH_FACTOR} + ${GROWTH_ROWS} END
ORDER BY c.relname`;

/**
 * The next transaction id: unchanged, nothing was written (every writing transaction takes one;
 * a read may still add to the write-ahead log, as PGlite's pages carry checksums).
 */
const NEXT_WRITE = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid";

export type Analyzer = {
  /** Analyses every table, unless nothing was written since the last time it did. */
  analyzeAll(): Promise<void>;
  /** Analyses the tables that grew since their last ANALYZE; resolves to their names. */
  analyzeGrown(): Promise<string[]>;
  stop(): void;
};

/**
 * Keeps `session`'s planner statistics current: the tables that grew every `checkEveryMs`, every
 * table every `analyzeEveryMs`. The timers do not keep the process alive; a round still running
 * when the next is due is not doubled, and a failed one (the database closing) is dropped.
 */
export function keepingStatistics(session: SqlSession, { checkEveryMs, analyzeEveryMs }: { checkEveryMs: number; analyzeEveryMs: number }): Analyzer {
  let busy: Promise<unknown> = Promise.resolve();
  let analyzedAt: string | undefined;
  const nextWrite = async () => (await session.query<{ xid: string }>(NEXT_WRITE))[0]?.xid;
  // One round at a time: a full ANALYZE and a growth check never interleave.
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const next = busy.then(work);
    busy = next.catch(() => undefined);
    return next;
  };
  const analyzer: Analyzer = {
    analyzeAll: () =>
      exclusive(async () => {
        if (analyzedAt !== undefined && (await nextWrite()) === analyzedAt) return;
        await session.exec("ANALYZE");
        analyzedAt = await nextWrite();
      }),
    analyzeGrown: () =>
      exclusive(async () => {
        const grown = await session.query<{ name: string; partitioned: boolean }>(GROWN_TABLES);
        // A partitioned table alone: its partitions are analysed as tables of their own.
        for (const { name, partitioned } of grown) await session.exec(`ANALYZE ${partitioned ? "ONLY " : ""}${name}`);
        return grown.map(({ name }) => name);
      }),
    stop() {
      clearInterval(checking);
      clearInterval(analyzing);
    },
  };
  const quietly = (round: () => Promise<unknown>) => {
    let running = false;
    return () => {
      if (running) return;
      running = true;
      round()
        .catch(() => undefined)
        .finally(() => (running = false));
    };
  };
  const checking = setInterval(quietly(analyzer.analyzeGrown), checkEveryMs);
  const analyzing = setInterval(quietly(analyzer.analyzeAll), analyzeEveryMs);
  checking.unref();
  analyzing.unref();
  return analyzer;
}
