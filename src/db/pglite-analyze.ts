// The embedded database's planner statistics. PGlite runs no autovacuum, so nothing else refreshes
// them, and its per-table activity counters (which tell autovacuum how many rows changed) are off
// to keep its memory small (open-database.ts). A table's size on disk tells instead: PGlite never
// vacuums, so inserted rows and the new versions of updated ones all add pages. Every few seconds
// each table's file size is compared with the pages its last ANALYZE saw (pg_class.relpages), and
// only a table that grew past autovacuum-like bounds is analysed, one statement each, holding the
// one connection as long as its sample takes (30,000 rows at most). The sizes are read from
// PGlite's file system, not through SQL: a check that finds nothing sends no statement and touches
// none of the database's memory (pg_relation_size opens every table: about 1.5 MB more in an idle
// server). The planner scales a table's row count by its current pages by itself, but its column
// statistics (distinct values, most common values, histograms) stay as the last ANALYZE left them:
// made on an empty table, a turn's statements kept plans for an empty table while it grew to
// thousands of rows. A full ANALYZE every few minutes catches what changes without growing
// (deleted rows), skipped when nothing was written since the last: an idle server analyses nothing.
import type { SqlSession } from "./sql-session.js";

/** A table is analysed again once its pages exceed this share of those its last ANALYZE saw... */
const GROWTH_FACTOR = 1.2;
/** ...plus these: small tables are not analysed for every page of rows. */
const GROWTH_PAGES = 2;
/** PostgreSQL's segment size: a table's file beyond it continues in `<file>.1`, `<file>.2`… */
const SEGMENT_BYTES = 1024 ** 3;

/**
 * The user tables with their files and what their last ANALYZE saw. Plain tables only: the
 * embedded database partitions none (trace tables are split by week on PostgreSQL alone).
 */
const TABLES = `
SELECT format('%I.%I', n.nspname, c.relname) AS name,
       current_setting('data_directory') || '/' || pg_relation_filepath(c.oid) AS file,
       current_setting('block_size')::int AS "blockSize", c.relpages AS pages, c.reltuples::float8 AS rows
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND c.relpersistence <> 't' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY c.relname`;

type Table = { name: string; file: string; blockSize: number; pages: number; rows: number };

/**
 * The next transaction id: unchanged, nothing was written (every writing transaction takes one;
 * a read may still add to the write-ahead log, as PGlite's pages carry checksums).
 */
const NEXT_WRITE = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid";

/** A file's size in bytes, undefined when there is no such file. */
export type FileSize = (file: string) => number | undefined;

/** The size of a file of PGlite's (Emscripten's) file system: in memory, or the data folder's. */
export function pgliteFileSize(pglite: object): FileSize | undefined {
  const fs = (pglite as { mod?: { FS?: { stat(path: string): { size: number } } } }).mod?.FS;
  if (!fs) return undefined;
  return (file) => {
    try {
      return fs.stat(file).size;
    } catch {
      return undefined;
    }
  };
}

export type Analyzer = {
  /** Analyses every table, unless nothing was written since the last time it did. */
  analyzeAll(): Promise<void>;
  /** Analyses the tables that grew since their last ANALYZE; resolves to their names. */
  analyzeGrown(): Promise<string[]>;
  stop(): void;
};

/**
 * Keeps `session`'s planner statistics current: the tables that grew every `checkEveryMs` (when
 * their files' sizes can be read), every table every `analyzeEveryMs`, unless nothing was written
 * since the last time (or since the start, for a database `analysed` already). The timers do not keep the
 * process alive; a round still running when the next is due is not doubled, and a failed one (the
 * database closing) is dropped.
 */
export function keepingStatistics(
  session: SqlSession,
  {
    checkEveryMs,
    analyzeEveryMs,
    fileSize,
    analysed = false,
  }: {
    checkEveryMs: number;
    analyzeEveryMs: number;
    fileSize?: FileSize;
    /** Nothing was written since the database's last full ANALYZE: the next waits for a write. */
    analysed?: boolean;
  },
): Analyzer {
  let busy: Promise<unknown> = Promise.resolve();
  let analyzedAt: string | undefined;
  // What the last ANALYZE of each table saw, read again after any ANALYZE.
  let tables: Table[] | undefined;
  const nextWrite = async () => (await session.query<{ xid: string }>(NEXT_WRITE))[0]?.xid;
  // One round at a time: a full ANALYZE and a growth check never interleave.
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const next = busy.then(work);
    busy = next.catch(() => undefined);
    return next;
  };
  /** A table's pages now; undefined when its file is gone (rewritten or dropped: the list is stale). */
  const pagesOf = (file: string, blockSize: number): number | undefined => {
    let bytes = 0;
    for (let segment = 0; ; segment += 1) {
      const size = fileSize?.(segment === 0 ? file : `${file}.${segment}`);
      if (size === undefined) return segment === 0 ? undefined : Math.floor(bytes / blockSize);
      bytes += size;
      if (size < SEGMENT_BYTES) return Math.floor(bytes / blockSize);
    }
  };
  const grew = (table: Table): boolean => {
    const pages = pagesOf(table.file, table.blockSize);
    if (pages === undefined) tables = undefined;
    return pages !== undefined && pages > 0 && (table.rows < 0 || pages > table.pages * GROWTH_FACTOR + GROWTH_PAGES);
  };
  if (analysed) {
    exclusive(async () => {
      analyzedAt = await nextWrite();
    }).catch(() => undefined);
  }
  const analyzer: Analyzer = {
    analyzeAll: () =>
      exclusive(async () => {
        if (analyzedAt !== undefined && (await nextWrite()) === analyzedAt) return;
        await session.exec("ANALYZE");
        tables = undefined;
        analyzedAt = await nextWrite();
      }),
    analyzeGrown: () =>
      exclusive(async () => {
        if (!fileSize) return [];
        tables ??= await session.query<Table>(TABLES);
        const grown = tables.filter(grew);
        for (const { name } of grown) await session.exec(`ANALYZE ${name}`);
        if (grown.length > 0) tables = undefined;
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
