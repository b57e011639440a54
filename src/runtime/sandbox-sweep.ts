// Removes the sandbox folders (`<DATA_DIR>/sandbox/<runId>`) of runs that ended more than
// SANDBOX_RETENTION_HOURS ago. Nothing reads a run's folder once it ended: its files were only
// ever the run's own working copies (its tool results, answer and spills are in the database),
// and every run, a later one in the same conversation included, gets a folder of its own. The
// hours left are for the operator to look at what a run wrote; a write that would pass the
// sandbox budgets removes ended runs' folders before them (tools/sandbox-ledger.ts).
//
// A folder whose run is still under way (queued, running, waiting, paused), and one that names
// no run of this database, is left alone: it counts against the budgets as long as it is there,
// a paused run's against its principal's until the run is resumed and ends. Every instance that
// runs a worker sweeps its own DATA_DIR; instances sharing one remove each folder once (a removal
// that finds it gone is fine), and each tells its ledger which folders the others removed or made.
import { opendir, rm } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../logger.js";
import type { FolderRun, SandboxLedger } from "./tools/sandbox-ledger.js";

export type SandboxSweepDeps = {
  /** The folder holding every run's sandbox folder. */
  dir: string;
  /** How long after its run ended a folder is kept. */
  retentionMs: number;
  /** The runs among these this database knows, and when each ended (RunState.lifetimes). */
  runs: (runIds: readonly string[]) => Promise<FolderRun[]>;
  /** What the folders hold together, told which are gone and which are new. */
  ledger?: SandboxLedger;
  logger: Logger;
  now?: () => Date;
};

/** Run ids asked about per query. */
const BATCH = 500;

/** One sweep; returns how many folders it removed. */
export async function sweepSandboxes(deps: SandboxSweepDeps): Promise<number> {
  const ledger = deps.ledger;
  const known = ledger?.snapshot();
  const listing = await opendir(deps.dir).catch((error: NodeJS.ErrnoException) => {
    // No run ever wrote a file here.
    if (error.code === "ENOENT") return null;
    throw error;
  });
  const present = new Set<string>();
  let removed = 0;
  let batch: string[] = [];
  if (listing) {
    for await (const entry of listing) {
      if (!entry.isDirectory()) continue;
      present.add(entry.name);
      batch.push(entry.name);
      if (batch.length === BATCH) {
        removed += await removeEnded(deps, batch);
        batch = [];
      }
    }
  }
  if (batch.length > 0) removed += await removeEnded(deps, batch);
  if (ledger && known) await ledger.settle(known, present);
  return removed;
}

async function removeEnded(deps: SandboxSweepDeps, names: string[]): Promise<number> {
  const before = (deps.now?.() ?? new Date()).getTime() - deps.retentionMs;
  const runs = await deps.runs(names);
  // The ledger learns which folders' runs ended, heard or not.
  deps.ledger?.learn(runs);
  const due = runs.filter((run) => run.endedAt !== null && run.endedAt.getTime() <= before);
  let removed = 0;
  for (const { id } of due) {
    try {
      // Not following symlinks: a link a program made is removed, never what it points to.
      await rm(path.join(deps.dir, id), { recursive: true, force: true, maxRetries: 2 });
      deps.ledger?.forget(id);
      removed += 1;
    } catch (error) {
      // A folder a program made unremovable (no write permission) is left; the others go on.
      deps.logger.warn("could not remove a sandbox folder", { runId: id, error: String(error) });
    }
  }
  return removed;
}
