// The layout of the time-partitioned trace tables on PostgreSQL (span, span_event, trace_change).
//
// Each table is partitioned by RANGE on its own column `period` (timestamptz, NOT NULL, DEFAULT
// now()): the time the row was written, never one of its real timestamps, so moving a row between
// partitions is an UPDATE of `period` alone. The partitions of a table are
//   - one per week (Monday 00:00 UTC to the next Monday), named `<table>_p<yyyymmdd>` after the Monday:
//     a week keeps the number of partitions small (every lookup by id or trace id probes each
//     partition's index: partition pruning cannot use a trace id) while still freeing storage in
//     steps much smaller than any sensible retention period;
//   - `<table>_retained` for `period` = 'infinity': rows that outlived the week they were written in
//     (pinned traces, traces not yet due, summaries); retention deletes from it row by row;
//   - `<table>_default`, a safety net for a row no week partition covers (a clock far ahead, a
//     maintenance step that never ran): inserts never fail for want of a partition.
// The embedded database (PGlite) keeps the plain tables: it expires traces in bounded batches.

/** The partitioned tables, each with the column its existing rows' period is taken from when converted. */
export const PARTITIONED_TABLES = [
  { table: "span", timeColumn: "started_at" },
  { table: "span_event", timeColumn: "at" },
  { table: "trace_change", timeColumn: "at" },
] as const;

export type PartitionedTable = (typeof PARTITIONED_TABLES)[number]["table"];

export const PERIOD_MS = 7 * 24 * 60 * 60 * 1000;

/** How many weeks after the current one always have their partitions. */
export const WEEKS_AHEAD = 4;

/** The `period` value of rows kept past their week. */
export const RETAINED_PERIOD = "infinity";

/** The Monday 00:00 UTC that starts the week holding `at`. */
export function periodStart(at: Date): Date {
  const day = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  const sinceMonday = (day.getUTCDay() + 6) % 7;
  return new Date(day.getTime() - sinceMonday * 24 * 60 * 60 * 1000);
}

export function periodEnd(start: Date): Date {
  return new Date(start.getTime() + PERIOD_MS);
}

/** `span_p20261130` for the week starting Monday 30 November 2026. */
export function partitionName(table: PartitionedTable, start: Date): string {
  return `${table}_p${start.toISOString().slice(0, 10).replaceAll("-", "")}`;
}

export const retainedPartition = (table: PartitionedTable) => `${table}_retained`;
export const defaultPartition = (table: PartitionedTable) => `${table}_default`;

/** The week a `<table>_p<yyyymmdd>` partition holds, or null for any other name. */
export function periodOfPartition(name: string): Date | null {
  const match = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : null;
}

/** The starts of every week from the one holding `from` to the one holding `to`, inclusive. */
export function periodsBetween(from: Date, to: Date): Date[] {
  const periods: Date[] = [];
  for (let start = periodStart(from); start.getTime() <= to.getTime(); start = periodEnd(start)) periods.push(start);
  return periods;
}
