// Removes the sandbox folders (`<DATA_DIR>/sandbox/<runId>`) of runs that ended more than
// SANDBOX_RETENTION_HOURS ago. Nothing reads a run's folder once it ended: its files were only
// ever the run's own working copies (its tool results, answer and spills are in the database),
// and every run, a later one in the same conversation included, gets a folder of its own. The
// hours left are for the operator to look at what a run wrote.
//
// A folder whose run is still under way (queued, running, waiting, paused), and one that names
// no run of this database, is left alone. Every instance that runs a worker sweeps its own
// DATA_DIR; instances sharing one remove each folder once (a removal that finds it gone is fine).
import { opendir, rm } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../logger.js";

export type SandboxSweepDeps = {
  /** The folder holding every run's sandbox folder. */
  dir: string;
  /** How long after its run ended a folder is kept. */
  retentionMs: number;
  /** The runs among these that have ended, and when (RunState.ended). */
  ended: (runIds: readonly string[]) => Promise<{ id: string; endedAt: Date }[]>;
  logger: Logger;
  now?: () => Date;
};

/** Run ids asked about per query. */
const BATCH = 500;

/** One sweep; returns how many folders it removed. */
export async function sweepSandboxes(deps: SandboxSweepDeps): Promise<number> {
  const listing = await opendir(deps.dir).catch((error: NodeJS.ErrnoException) => {
    // No run ever wrote a file here.
    if (error.code === "ENOENT") return null;
    throw error;
  });
  if (!listing) return 0;
  let removed = 0;
  let batch: string[] = [];
  for await (const entry of listing) {
    if (!entry.isDirectory()) continue;
    batch.push(entry.name);
    if (batch.length === BATCH) {
      removed += await removeEnded(deps, batch);
      batch = [];
    }
  }
  if (batch.length > 0) removed += await removeEnded(deps, batch);
  return removed;
}

async function removeEnded(deps: SandboxSweepDeps, names: string[]): Promise<number> {
  const before = (deps.now?.() ?? new Date()).getTime() - deps.retentionMs;
  const due = (await deps.ended(names)).filter((run) => run.endedAt.getTime() <= before);
  let removed = 0;
  for (const { id } of due) {
    try {
      // Not following symlinks: a link a program made is removed, never what it points to.
      await rm(path.join(deps.dir, id), { recursive: true, force: true, maxRetries: 2 });
      removed += 1;
    } catch (error) {
      // A folder a program made unremovable (no write permission) is left; the others go on.
      deps.logger.warn("could not remove a sandbox folder", { runId: id, error: String(error) });
    }
  }
  return removed;
}
