// What one run's sandbox folder may hold (R15): a write names a path at most SANDBOX_MAX_PATH_DEPTH
// parts deep and SANDBOX_MAX_PATH_LENGTH characters long, and the folder holds at most
// SANDBOX_MAX_ENTRIES files and folders and SANDBOX_MAX_BYTES bytes of files. A write past a bound
// is refused with an error the model reads; the run goes on.
//
// The folder is counted from disk once per attempt, on its first write (so the bounds hold across
// a worker's restart and a new attempt of the run), then kept up to date by the writes themselves,
// which go one at a time. A program run_command ran may have changed anything: the folder is
// counted while it runs (command-disk.ts) and again after it (before the next write at the latest).
//
// What the folders of one principal's runs, and of every run, hold together is bounded too: a
// write also takes its bytes from the process's ledger (sandbox-ledger.ts), which each count of
// the folder keeps up to date.
import { lstat } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../ports/tool.js";
import { type Count, countFrom } from "./sandbox-count.js";
import type { SandboxLedger } from "./sandbox-ledger.js";

export type SandboxLimits = {
  /** Files and folders (SANDBOX_MAX_ENTRIES). */
  maxEntries: number;
  /** Bytes of its files together (SANDBOX_MAX_BYTES). */
  maxBytes: number;
  /** Parts of a written path: its folders and the file's name (SANDBOX_MAX_PATH_DEPTH). */
  maxPathDepth: number;
  /** Characters of a written path (SANDBOX_MAX_PATH_LENGTH). */
  maxPathLength: number;
};

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = { maxEntries: 10_000, maxBytes: 256 * 1024 * 1024, maxPathDepth: 16, maxPathLength: 1_024 };

/** What a write adds to the folder: the folders it makes, whether the file is new, and the bytes it takes beyond the file's old ones. */
export type Addition = { folders: number; file: 0 | 1; bytes: number };

const exists = (target: string) =>
  lstat(target).then(
    () => true,
    () => false,
  );

/** The ledger a folder's writes count in, and whose folder it is: the run it is named after and the run's owner. */
export type SandboxShare = { ledger: SandboxLedger; runId: string; owner: string };

export class SandboxUsage {
  readonly limits: SandboxLimits;
  private count: Count | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly root: string,
    limits: Partial<SandboxLimits> = {},
    private readonly share?: SandboxShare,
  ) {
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...limits };
  }

  /** Refuses a path the model gave that is longer or deeper than a write may name (`inside`: it relative to the folder, normalised). */
  checkPath(given: string, inside: string): void {
    const { maxPathLength, maxPathDepth } = this.limits;
    if (given.length > maxPathLength) throw new ToolError(`path is ${given.length} characters long; a path may have at most ${maxPathLength}.`);
    const depth = inside.split(path.sep).length;
    if (depth > maxPathDepth) {
      throw new ToolError(`path has ${depth} parts; a path may have at most ${maxPathDepth} (its folders and the file's name).`);
    }
  }

  /** What writing `bytes` bytes to the file at `real` (a path inside the folder, symlinks followed) adds to the folder. */
  async additionOf(real: string, bytes: number): Promise<Addition> {
    let folders = 0;
    // The folder itself exists (it is made before the first write): the walk up ends there at the latest.
    for (let folder = path.dirname(real); folder !== path.dirname(folder) && !(await exists(folder)); folder = path.dirname(folder)) folders += 1;
    const old = await lstat(real).catch(() => null);
    return { folders, file: old ? 0 : 1, bytes: bytes - (old?.isFile() ? old.size : 0) };
  }

  /**
   * Runs `write` once what it adds (`addition(real)`) is known to fit the folder's bounds, after
   * the run's writes before it; refuses it otherwise (by `shown`, the model's path).
   */
  async write<T>(shown: string, addition: () => Promise<Addition>, write: () => Promise<T>): Promise<T> {
    const turn = this.queue.then(async () => {
      const count = (this.count ??= await this.counted());
      const added = await addition();
      this.refuseBeyond(count, added, shown);
      const share = this.share;
      await share?.ledger.reserve(share.runId, share.owner, added.bytes, shown);
      try {
        const result = await write();
        count.entries += added.folders + added.file;
        count.bytes += added.bytes;
        return result;
      } catch (error) {
        // Part of it may be on disk (its folders): counted again before the next write.
        share?.ledger.add(share.runId, share.owner, -added.bytes);
        this.stale();
        throw error;
      }
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /** The folder may have changed beyond the writes: it is counted again before the next one. */
  stale(): void {
    this.count = undefined;
  }

  /**
   * A program run_command ran may have changed anything: the folder is counted again now, after
   * the writes before it, so the ledger holds what the program left before another run writes.
   */
  recount(): Promise<void> {
    this.stale();
    if (!this.share) return Promise.resolve();
    // A count that failed is tried again before the next write.
    const turn = this.queue.then(async () => {
      this.count ??= await this.counted();
    });
    const settled = turn.catch(() => undefined);
    this.queue = settled;
    return settled;
  }

  /**
   * Bytes a program run_command runs may still write (its RLIMIT_FSIZE, command-disk.ts): the least
   * room the folder's bound and its owner's and every folder's budgets leave, counted after the
   * writes before it.
   */
  room(): Promise<number> {
    const turn = this.queue.then(async () => {
      const count = (this.count ??= await this.counted());
      const folder = Math.max(0, this.limits.maxBytes - count.bytes);
      return this.share ? Math.min(folder, this.share.ledger.roomFor(this.share.owner)) : folder;
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /**
   * Counts the folder while a program writes to it (command-disk.ts), telling the ledger: why it
   * holds more than a bound or budget allows, or null. In turn with the writes and the recount
   * after the program, so a count begun before the program's last writes never lands after it.
   */
  look(): Promise<string | null> {
    const turn = this.queue.then(async () => {
      this.stale();
      const count = await this.counted();
      const { maxEntries, maxBytes } = this.limits;
      if (count.entries > maxEntries) return `the sandbox may hold at most ${maxEntries} files and folders, and it held more`;
      if (count.bytes > maxBytes) return `the sandbox may hold at most ${maxBytes} bytes of files, and it held ${count.bytes}`;
      return this.share ? this.share.ledger.past(this.share.owner) : null;
    });
    // The program may go on changing the folder: counted again before the next write.
    this.queue = turn.then(
      () => this.stale(),
      () => this.stale(),
    );
    return turn;
  }

  /** The folder as it is on disk, told to the ledger. */
  private async counted(): Promise<Count> {
    const count = await countFrom(this.root, this.limits.maxEntries);
    this.share?.ledger.counted(this.share.runId, this.share.owner, count.bytes);
    return count;
  }

  private refuseBeyond(count: Count, added: Addition, shown: string): void {
    const { maxEntries, maxBytes } = this.limits;
    const entries = added.folders + added.file;
    if (count.entries + entries > maxEntries) {
      throw new ToolError(
        `The sandbox may hold at most ${maxEntries} files and folders: it holds ${count.entries}, and writing ${shown} would add ${entries}. ` +
          "Write into existing folders, or overwrite files you no longer need.",
      );
    }
    if (count.bytes + added.bytes > maxBytes) {
      throw new ToolError(
        `The sandbox may hold at most ${maxBytes} bytes of files: it holds ${count.bytes}, and writing ${shown} would make it ${count.bytes + added.bytes}. ` +
          "Overwrite files you no longer need with shorter ones.",
      );
    }
  }
}
