// The sandbox folders of an instance's runs (R15): one ledger of what they hold together
// (tools/sandbox-ledger.ts), each attempt's count of its own folder (tools/sandbox-usage.ts) and
// the sweep of ended runs' folders (sandbox-sweep.ts), over one DATA_DIR.
import path from "node:path";
import type { RunStatusMessage } from "../events/topics.js";
import { isTerminal } from "../domain/runs/stop-reasons.js";
import type { Logger } from "../logger.js";
import { PeriodicSweep } from "./periodic-sweep.js";
import type { RunRecord, RunState } from "./ports/run-state.js";
import { sweepSandboxes } from "./sandbox-sweep.js";
import { type SandboxBudgets, SandboxLedger } from "./tools/sandbox-ledger.js";
import { type SandboxLimits, SandboxUsage } from "./tools/sandbox-usage.js";

export type SandboxSettings = {
  /** What one run's folder may hold and what a write may name (SANDBOX_MAX_*; sandbox-usage.ts). */
  limits?: Partial<SandboxLimits>;
  /** What the folders of one principal's runs, and every folder, may hold together (sandbox-ledger.ts). */
  budgets?: Partial<SandboxBudgets>;
  /** How long a folder is kept after its run ended (SANDBOX_RETENTION_HOURS, 24), and how often that is swept. */
  retentionHours?: number;
  sweepIntervalMs?: number;
};

export type SandboxSpace = {
  ledger: SandboxLedger;
  /** One attempt's count of its run's folder (`<dir>/<runId>`), shared by its file tools and run_command. */
  usageOf(run: Pick<RunRecord, "id" | "ownerId">): SandboxUsage;
  /** Removes the folders of runs that ended SANDBOX_RETENTION_HOURS ago while the worker runs. */
  sweeper: PeriodicSweep;
  /** The worker's companion: counts the folders on disk once it starts, and tells the ledger which runs end, as the worker hears them. */
  watcher: { start(): void; stop(): Promise<void>; heard(change: RunStatusMessage): void; unheard(): void };
};

export function sandboxSpace(
  { dir, runs, logger }: { dir: string; runs: Pick<RunState, "lifetimes">; logger: Logger },
  settings: SandboxSettings = {},
): SandboxSpace {
  const lifetimes = (runIds: readonly string[]) => runs.lifetimes(runIds);
  const ledger = new SandboxLedger({ dir: path.resolve(dir), budgets: settings.budgets, runs: lifetimes, maxEntries: settings.limits?.maxEntries });
  // Each instance sweeps the sandbox folders of its own DATA_DIR.
  const sweeper = new PeriodicSweep({
    sweep: () => sweepSandboxes({ dir, retentionMs: (settings.retentionHours ?? 24) * 3_600_000, runs: lifetimes, ledger, logger }),
    intervalMs: settings.sweepIntervalMs ?? 600_000,
    logger,
    swept: "removed the sandbox folders of runs that ended SANDBOX_RETENTION_HOURS ago",
    failed: "sweeping sandbox folders failed",
  });
  const watcher: SandboxSpace["watcher"] = {
    start: () => ledger.start(),
    stop: async () => undefined,
    heard: (change) => {
      if (isTerminal(change.status)) ledger.ended(change.runId, new Date(change.at));
    },
    // Runs that ended meanwhile went unheard: the ledger reads them.
    unheard: () => void ledger.refresh().catch((error: unknown) => logger.warn("reading which sandbox folders' runs ended failed", { error: String(error) })),
  };
  return {
    ledger,
    usageOf: (run) => new SandboxUsage(path.resolve(dir, run.id), settings.limits, { ledger, runId: run.id, owner: run.ownerId }),
    sweeper,
    watcher,
  };
}
