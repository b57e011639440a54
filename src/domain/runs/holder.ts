// Which attempt of which worker holds a run (R18), and the one SQL check of it: the run row,
// locked FOR NO KEY UPDATE, still RUNNING under that attempt and worker. The attempt fence
// (domain/runs/attempt-fence.ts) runs it at the start of each fenced transaction; a write that is a
// single statement (trace events, domain/trace/trace-writes.ts) carries it inside itself.

export type Holder = { runId: string; attempt: number; workerId: string };

/**
 * The check as a query over the parameters $first (run id), $first+1 (attempt) and $first+2
 * (worker): one row, locked, while the holder holds the run; none otherwise.
 */
export function holdsRunSql(first: number): string {
  return `SELECT 1 FROM run WHERE id = $${first} AND attempt = $${first + 1}::int AND lease_owner = $${first + 2} AND status = 'RUNNING' FOR NO KEY UPDATE`;
}
