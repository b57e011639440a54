// What the sandbox folders on this instance's DATA_DIR hold together (R15): the bytes of files of
// each principal's runs' folders (SANDBOX_MAX_BYTES_PER_PRINCIPAL) and of every folder
// (SANDBOX_MAX_BYTES_TOTAL), so one principal, or its model, cannot fill the disk the database
// and every other principal need. A folder counts while it exists: its run running, waiting or
// paused, or ended and kept for SANDBOX_RETENTION_HOURS.
//
// One ledger per process, kept in memory. It is counted from disk once, before the first write
// it is asked about (the folders, and their runs' owners from the database), then kept up to date
// by the writes themselves (sandbox-usage.ts), by each attempt's own counts of its folder (its
// first write, and after every run_command), and by the sweep (sandbox-sweep.ts), which drops the
// folders it or another instance removed and counts the ones another instance made. A write's
// check and its reservation happen together, with nothing awaited between them: of two runs of
// one principal writing at once, only one gets the last bytes.
//
// A write that would pass a budget first removes ended runs' folders, oldest first: they are only
// working copies (sandbox-sweep.ts), kept for the operator to look at. Past the principal's budget
// only that principal's own; past the whole instance's, anyone's. A folder whose run is under way
// (a paused one included: its run reads it again when resumed) is never removed; it counts
// against its principal's budget until its run ends.
//
// Instances sharing one DATA_DIR each bound their own writes: the others' folders count as they
// were when this one counted them (at its first write, or when its sweep first saw them).
import { opendir, rm } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../ports/tool.js";
import { countFrom } from "./sandbox-count.js";

export type SandboxBudgets = {
  /** Bytes of files the folders of one principal's runs may hold together (SANDBOX_MAX_BYTES_PER_PRINCIPAL). */
  perPrincipal: number;
  /** Bytes of files every folder may hold together (SANDBOX_MAX_BYTES_TOTAL). */
  total: number;
};

export const DEFAULT_SANDBOX_BUDGETS: SandboxBudgets = { perPrincipal: 1024 ** 3, total: 4 * 1024 ** 3 };

/** A run a folder is named after: its owner, and when it ended (null while it is under way). */
export type FolderRun = { id: string; ownerId: string; endedAt: Date | null };

export type SandboxLedgerDeps = {
  /** The folder holding every run's sandbox folder. */
  dir: string;
  budgets?: Partial<SandboxBudgets>;
  /** The runs among these this database knows (RunState.lifetimes). */
  runs: (runIds: readonly string[]) => Promise<FolderRun[]>;
  /** Files and folders a folder is counted up to (SANDBOX_MAX_ENTRIES): beyond it, its bytes are those counted so far. */
  maxEntries?: number;
};

/** Run ids asked about per query. */
const BATCH = 500;

type Folder = { owner: string | null; bytes: number; version: number };

/** Which budget a write would pass. */
type Passed = "principal" | "total";

export class SandboxLedger {
  readonly budgets: SandboxBudgets;
  private readonly folders = new Map<string, Folder>();
  private readonly owners = new Map<string, number>();
  private total = 0;
  private seeded: Promise<void> | undefined;
  private removals: Promise<unknown> = Promise.resolve();
  private versions = 0;

  constructor(private readonly deps: SandboxLedgerDeps) {
    this.budgets = { ...DEFAULT_SANDBOX_BUDGETS, ...deps.budgets };
  }

  /** Bytes the folders of `owner`'s runs hold, as counted. */
  bytesOf(owner: string): number {
    return this.owners.get(owner) ?? 0;
  }

  /** Bytes every folder holds, as counted. */
  totalBytes(): number {
    return this.total;
  }

  /** Counts every folder on disk once, before the first write (a failed count is tried again on the next). */
  ready(): Promise<void> {
    this.seeded ??= this.seed().catch((error: unknown) => {
      this.seeded = undefined;
      throw error;
    });
    return this.seeded;
  }

  /** A run's folder was counted from disk: it holds `bytes` (replacing what was known of it). */
  counted(runId: string, owner: string | null, bytes: number): void {
    this.set(runId, owner, bytes);
  }

  /** A run's folder changed by `bytes` (negative: it shrank). */
  add(runId: string, owner: string | null, bytes: number): void {
    this.set(runId, owner, (this.folders.get(runId)?.bytes ?? 0) + bytes);
  }

  /** A run's folder is gone. */
  forget(runId: string): void {
    const folder = this.folders.get(runId);
    if (!folder) return;
    this.total -= folder.bytes;
    if (folder.owner !== null) this.owners.set(folder.owner, this.bytesOf(folder.owner) - folder.bytes);
    this.folders.delete(runId);
  }

  /**
   * Reserves `bytes` more for `runId`'s folder once they fit both budgets, after removing ended
   * runs' folders if that makes them fit; refuses the write (by `shown`, the model's path) otherwise.
   */
  async reserve(runId: string, owner: string, bytes: number, shown: string): Promise<void> {
    await this.ready();
    if (bytes > 0 && this.passes(owner, bytes)) await this.removeEnded(owner, bytes);
    // Checked and reserved with nothing awaited between: a write of another run sees this one's bytes.
    const passed = bytes > 0 ? this.passes(owner, bytes) : null;
    if (passed) throw this.refusal(passed, owner, bytes, shown);
    this.add(runId, owner, bytes);
  }

  /** What the ledger knows of each folder's version: the sweep compares it after listing the folders (settle). */
  snapshot(): Map<string, number> {
    return new Map([...this.folders].map(([id, folder]) => [id, folder.version]));
  }

  /**
   * The sweep found these folders (`present`, the names listed after `before` was taken): a folder
   * known then and unchanged since that is no longer there was removed (by this instance or
   * another); one never known was made by another instance, and is counted.
   */
  async settle(before: Map<string, number>, present: ReadonlySet<string>): Promise<void> {
    if (!this.seeded) return;
    await this.ready();
    for (const [id, version] of before) if (!present.has(id) && this.folders.get(id)?.version === version) this.forget(id);
    const unknown = [...present].filter((id) => !before.has(id) && !this.folders.has(id));
    await this.countFolders(unknown, (id) => !this.folders.has(id));
  }

  private async seed(): Promise<void> {
    const names: string[] = [];
    const listing = await opendir(this.deps.dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw error;
    });
    if (listing) for await (const entry of listing) if (entry.isDirectory()) names.push(entry.name);
    // A folder an attempt counted meanwhile is newer than this count.
    await this.countFolders(names, (id) => !this.folders.has(id));
  }

  /** Counts the folders `names` and their runs' owners; each is recorded when `still(id)` holds once counted. */
  private async countFolders(names: string[], still: (id: string) => boolean): Promise<void> {
    const wanted = names.filter(still);
    for (let i = 0; i < wanted.length; i += BATCH) {
      const batch = wanted.slice(i, i + BATCH);
      const owners = new Map((await this.deps.runs(batch)).map((run) => [run.id, run.ownerId]));
      for (const id of batch) {
        const { bytes } = await countFrom(path.join(this.deps.dir, id), this.deps.maxEntries ?? Number.MAX_SAFE_INTEGER);
        // A folder naming no run of this database takes the disk all the same: it counts in the total.
        if (still(id)) this.set(id, owners.get(id) ?? null, bytes);
      }
    }
  }

  private set(runId: string, owner: string | null, bytes: number): void {
    this.forget(runId);
    this.folders.set(runId, { owner, bytes, version: ++this.versions });
    this.total += bytes;
    if (owner !== null) this.owners.set(owner, this.bytesOf(owner) + bytes);
  }

  private passes(owner: string, bytes: number): Passed | null {
    if (this.bytesOf(owner) + bytes > this.budgets.perPrincipal) return "principal";
    if (this.total + bytes > this.budgets.total) return "total";
    return null;
  }

  /** Removes ended runs' folders, oldest first, until `bytes` more fit `owner`'s budgets; one removal at a time per process. */
  private removeEnded(owner: string, bytes: number): Promise<void> {
    const turn = this.removals.then(async () => {
      // The owner's own first; past the whole instance's budget, anyone's.
      if (this.passes(owner, bytes) === "principal") {
        const own = [...this.folders].filter(([, folder]) => folder.owner === owner).map(([id]) => id);
        await this.removeUntil(own, () => this.passes(owner, bytes) === "principal");
      }
      if (this.passes(owner, bytes) === "total") await this.removeUntil([...this.folders.keys()], () => this.passes(owner, bytes) === "total");
    });
    this.removals = turn.catch(() => undefined);
    return turn;
  }

  private async removeUntil(ids: string[], needed: () => boolean): Promise<void> {
    const ended: { id: string; endedAt: Date }[] = [];
    for (let i = 0; i < ids.length; i += BATCH) {
      for (const run of await this.deps.runs(ids.slice(i, i + BATCH))) if (run.endedAt) ended.push({ id: run.id, endedAt: run.endedAt });
    }
    ended.sort((a, b) => a.endedAt.getTime() - b.endedAt.getTime());
    for (const { id } of ended) {
      if (!needed()) return;
      try {
        // Not following symlinks: a link a program made is removed, never what it points to.
        await rm(path.join(this.deps.dir, id), { recursive: true, force: true, maxRetries: 2 });
        this.forget(id);
      } catch {
        // A folder a program made unremovable is left (the sweep logs it); the next one may do.
      }
    }
  }

  private refusal(passed: Passed, owner: string, bytes: number, shown: string): ToolError {
    if (passed === "principal") {
      const held = this.bytesOf(owner);
      return new ToolError(
        `The sandboxes of this run's owner's runs may hold at most ${this.budgets.perPrincipal} bytes of files together: they hold ${held}, ` +
          `and writing ${shown} would make it ${held + bytes}. Overwrite files you no longer need with shorter ones.`,
      );
    }
    return new ToolError(
      `The sandboxes of every run on this server may hold at most ${this.budgets.total} bytes of files together: they hold ${this.total}, ` +
        `and writing ${shown} would make it ${this.total + bytes}. Overwrite files you no longer need with shorter ones.`,
    );
  }
}
