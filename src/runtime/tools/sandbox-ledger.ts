// What the sandbox folders on this instance's DATA_DIR hold together (R15): the bytes of files of
// each principal's runs' folders (SANDBOX_MAX_BYTES_PER_PRINCIPAL) and of every folder
// (SANDBOX_MAX_BYTES_TOTAL), so one principal, or its model, cannot fill the disk the database
// and every other principal need. A folder counts while it exists: its run running, waiting or
// paused, or ended and kept for SANDBOX_RETENTION_HOURS.
//
// One ledger per process, kept in memory. The worker starts counting it from disk when it starts:
// first the folders' names and their runs (one listing, a query per 500 folders), then each folder,
// one after another. Writes do not wait for the whole count: a write first has its principal's
// folders counted (only those not counted yet), so the principal's budget holds from the first
// write; the total holds for what was counted so far, and a write past it with folders still
// uncounted waits for the rest before choosing what to remove. The ledger is then kept up to date
// by the writes themselves (sandbox-usage.ts), by each attempt's own counts of its folder (its
// first write, and after every run_command), and by the sweep (sandbox-sweep.ts), which drops the
// folders it or another instance removed and counts the ones another instance made. A write's
// check and its reservation happen together, with nothing awaited between them: of two runs of
// one principal writing at once, only one gets the last bytes.
//
// A write that would pass a budget first removes ended runs' folders, oldest first: they are only
// working copies (sandbox-sweep.ts), kept for the operator to look at. When each folder's run ended
// is kept with it, as counted, and learnt as runs end (every instance's run ends are heard on the
// event bus; the sweep reads them all again): a write past a budget asks the database nothing, and
// one with nothing removable is refused at once. Past the principal's budget
// only that principal's own; past the whole instance's, anyone's. A folder whose run is under way
// (a paused one included: its run reads it again when resumed) is never removed; it counts
// against its principal's budget until its run ends.
//
// Instances sharing one DATA_DIR each bound their own writes: the others' folders count as they
// were when this one counted them (when its worker started, or when its sweep first saw them).
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

/** What is known of a folder: its run's owner (null: it names no run), its bytes, and when its run ended (null: under way, or no run). */
type Folder = { owner: string | null; bytes: number; version: number; endedAt: Date | null; stuck?: boolean };

/** A folder listed on disk and not counted yet. */
type Listed = { owner: string | null; endedAt: Date | null };

/** Which budget a write would pass. */
type Passed = "principal" | "total";

export class SandboxLedger {
  readonly budgets: SandboxBudgets;
  private readonly folders = new Map<string, Folder>();
  private readonly owners = new Map<string, number>();
  private total = 0;
  /** Listed on disk, their runs known, not counted yet. */
  private readonly uncounted = new Map<string, Listed>();
  private readonly counting = new Map<string, Promise<void>>();
  private listing: Promise<void> | undefined;
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

  /** Bytes `owner`'s runs may still write before passing a budget, as counted (0 past one). */
  roomFor(owner: string): number {
    return Math.max(0, Math.min(this.budgets.perPrincipal - this.bytesOf(owner), this.budgets.total - this.total));
  }

  /** Why `owner`'s folders, or every folder, hold more than their budget allows (as counted); null when they do not. */
  past(owner: string): string | null {
    const held = this.bytesOf(owner);
    if (held > this.budgets.perPrincipal)
      return `the sandboxes of this run's owner's runs may hold at most ${this.budgets.perPrincipal} bytes of files together, and they held ${held}`;
    // Past the total: what the other principals' runs hold is theirs to know (as in the write's refusal).
    if (this.total > this.budgets.total) return `the sandbox space on this server is full, and this run's owner's runs held ${held} bytes of it`;
    return null;
  }

  /** Starts counting every folder on disk (when the worker starts); writes do not wait for it to end (see reserve). */
  start(): void {
    void this.ready().catch(() => undefined);
  }

  /** Resolves once every folder on disk was counted (a failed count is tried again on the next call). */
  ready(): Promise<void> {
    this.seeded ??= this.listed()
      .then(() => this.countAll())
      .catch((error: unknown) => {
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
    this.uncounted.delete(runId);
    const folder = this.folders.get(runId);
    if (!folder) return;
    this.total -= folder.bytes;
    if (folder.owner !== null) this.owners.set(folder.owner, this.bytesOf(folder.owner) - folder.bytes);
    this.folders.delete(runId);
  }

  /** A run ended (heard as it happened, or read by the sweep): its folder may be removed to make room from now on. */
  ended(runId: string, at: Date): void {
    const known = this.folders.get(runId) ?? this.uncounted.get(runId);
    if (known && known.endedAt === null) known.endedAt = at;
  }

  /** What the database says of these folders' runs (the sweep's look at every folder): ended runs' folders become removable. */
  learn(runs: readonly FolderRun[]): void {
    for (const run of runs) if (run.endedAt) this.ended(run.id, run.endedAt);
  }

  /** Reads again whether the runs of the folders under way ended (run ends may have gone unheard). */
  async refresh(): Promise<void> {
    const open = [...this.folders].filter(([, folder]) => folder.endedAt === null && folder.owner !== null).map(([id]) => id);
    for (let i = 0; i < open.length; i += BATCH) this.learn(await this.deps.runs(open.slice(i, i + BATCH)));
  }

  /**
   * Reserves `bytes` more for `runId`'s folder once they fit both budgets, after removing ended
   * runs' folders if that makes them fit; refuses the write (by `shown`, the model's path) otherwise.
   */
  async reserve(runId: string, owner: string, bytes: number, shown: string): Promise<void> {
    if (bytes > 0) {
      // Counted in the background from the first write if no worker started it.
      this.start();
      await this.listed();
      // The owner's folders are counted before its write; the others' as the count gets to them.
      await Promise.all([...this.uncounted].filter(([, listed]) => listed.owner === owner).map(([id]) => this.count(id)));
      if (this.passes(owner, bytes)) await this.removeEnded(owner, bytes);
      // Past the total with what was counted so far: the rest is counted before choosing what to remove.
      if (this.passes(owner, bytes) === "total" && this.uncounted.size > 0) {
        await this.ready();
        await this.removeEnded(owner, bytes);
      }
    }
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
   * another); one never known was made by another instance, and is counted. A folder that could not
   * be removed is tried again.
   */
  async settle(before: Map<string, number>, present: ReadonlySet<string>): Promise<void> {
    if (!this.listing) return;
    await this.ready();
    for (const folder of this.folders.values()) folder.stuck = false;
    for (const [id, version] of before) if (!present.has(id) && this.folders.get(id)?.version === version) this.forget(id);
    const unknown = [...present].filter((id) => !before.has(id) && !this.folders.has(id));
    await this.list(unknown);
    await this.countAll();
  }

  /** The folders on disk and their runs, listed once (a failed listing is tried again on the next call). */
  private listed(): Promise<void> {
    this.listing ??= this.listDisk().catch((error: unknown) => {
      this.listing = undefined;
      throw error;
    });
    return this.listing;
  }

  private async listDisk(): Promise<void> {
    const names: string[] = [];
    const listing = await opendir(this.deps.dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw error;
    });
    if (listing) for await (const entry of listing) if (entry.isDirectory()) names.push(entry.name);
    await this.list(names);
  }

  /** Looks up the runs of the folders `names` not known yet; they are counted later (count). */
  private async list(names: string[]): Promise<void> {
    const wanted = names.filter((id) => !this.folders.has(id) && !this.uncounted.has(id));
    for (let i = 0; i < wanted.length; i += BATCH) {
      const batch = wanted.slice(i, i + BATCH);
      const runs = new Map((await this.deps.runs(batch)).map((run) => [run.id, run]));
      // A folder naming no run of this database takes the disk all the same: it counts in the total.
      for (const id of batch)
        if (!this.folders.has(id)) this.uncounted.set(id, { owner: runs.get(id)?.ownerId ?? null, endedAt: runs.get(id)?.endedAt ?? null });
    }
  }

  private async countAll(): Promise<void> {
    for (const id of [...this.uncounted.keys()]) await this.count(id);
  }

  /** Counts one listed folder (once, however many ask); a folder an attempt counted meanwhile is newer than this count. */
  private count(id: string): Promise<void> {
    let counting = this.counting.get(id);
    if (!counting) {
      counting = countFrom(path.join(this.deps.dir, id), this.deps.maxEntries ?? Number.MAX_SAFE_INTEGER)
        .then(({ bytes }) => {
          const listed = this.uncounted.get(id);
          this.uncounted.delete(id);
          if (listed && !this.folders.has(id)) this.set(id, listed.owner, bytes, listed.endedAt);
        })
        .finally(() => this.counting.delete(id));
      this.counting.set(id, counting);
    }
    return counting;
  }

  private set(runId: string, owner: string | null, bytes: number, endedAt: Date | null = null): void {
    const known = this.folders.get(runId);
    this.forget(runId);
    this.folders.set(runId, { owner, bytes, version: ++this.versions, endedAt: known?.endedAt ?? endedAt });
    this.total += bytes;
    if (owner !== null) this.owners.set(owner, this.bytesOf(owner) + bytes);
  }

  private passes(owner: string, bytes: number): Passed | null {
    if (this.bytesOf(owner) + bytes > this.budgets.perPrincipal) return "principal";
    if (this.total + bytes > this.budgets.total) return "total";
    return null;
  }

  /** Ended runs' folders that may be removed, oldest first: `owner`'s, or anyone's. */
  private removable(owner: string | null): string[] {
    return [...this.folders]
      .filter(([, folder]) => folder.endedAt !== null && !folder.stuck && (owner === null || folder.owner === owner))
      .sort(([, a], [, b]) => a.endedAt!.getTime() - b.endedAt!.getTime())
      .map(([id]) => id);
  }

  /**
   * Removes ended runs' folders, oldest first, until `bytes` more fit `owner`'s budgets; one removal
   * at a time per process. Which runs ended is known without asking the database: a write with
   * nothing to remove is refused at once.
   */
  private async removeEnded(owner: string, bytes: number): Promise<void> {
    const passed = this.passes(owner, bytes);
    if (!passed || this.removable(passed === "principal" ? owner : null).length === 0) return;
    const turn = this.removals.then(async () => {
      // The owner's own first; past the whole instance's budget, anyone's.
      if (this.passes(owner, bytes) === "principal") await this.removeUntil(this.removable(owner), () => this.passes(owner, bytes) === "principal");
      if (this.passes(owner, bytes) === "total") await this.removeUntil(this.removable(null), () => this.passes(owner, bytes) === "total");
    });
    this.removals = turn.catch(() => undefined);
    return turn;
  }

  private async removeUntil(ids: string[], needed: () => boolean): Promise<void> {
    for (const id of ids) {
      if (!needed()) return;
      try {
        // Not following symlinks: a link a program made is removed, never what it points to.
        await rm(path.join(this.deps.dir, id), { recursive: true, force: true, maxRetries: 2 });
        this.forget(id);
      } catch {
        // A folder a program made unremovable is left until the next sweep (which logs it); the next one may do.
        const folder = this.folders.get(id);
        if (folder) folder.stuck = true;
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
    // Past the total: what the other principals' runs hold is theirs to know, not this one's.
    const held = this.bytesOf(owner);
    const full = `The sandbox space on this server is full: the ${bytes} bytes writing ${shown} would add do not fit.`;
    return new ToolError(
      held > 0
        ? `${full} This run's owner's runs hold ${held} bytes of it: overwrite files you no longer need with shorter ones, or try again later.`
        : `${full} This run's owner's runs hold none of it, so there is nothing of theirs to free: try again later, or ask the server's operator for room.`,
    );
  }
}
