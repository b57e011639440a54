// What one run's sandbox folder may hold (R15): a write names a path at most SANDBOX_MAX_PATH_DEPTH
// parts deep and SANDBOX_MAX_PATH_LENGTH characters long, and the folder holds at most
// SANDBOX_MAX_ENTRIES files and folders and SANDBOX_MAX_BYTES bytes of files. A write past a bound
// is refused with an error the model reads; the run goes on.
//
// The folder is counted from disk once per attempt, on its first write (so the bounds hold across
// a worker's restart and a new attempt of the run), then kept up to date by the writes themselves,
// which go one at a time. A program run_command ran may have changed anything: the folder is
// counted again before the next write.
import type { Dirent } from "node:fs";
import { lstat, opendir } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../ports/tool.js";

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

type Count = { entries: number; bytes: number };

/** What a write adds to the folder: the folders it makes, whether the file is new, and the bytes it takes beyond the file's old ones. */
export type Addition = { folders: number; file: 0 | 1; bytes: number };

const exists = (target: string) =>
  lstat(target).then(
    () => true,
    () => false,
  );

/** The files and folders below `root` and their bytes, counted until past `maxEntries` (more need not be known). */
async function countFrom(root: string, maxEntries: number): Promise<Count> {
  const count: Count = { entries: 0, bytes: 0 };
  const folders = [root];
  while (folders.length > 0 && count.entries <= maxEntries) {
    const folder = folders.pop()!;
    const listing = await opendir(folder).catch(() => null);
    if (!listing) continue;
    for await (const entry of listing as AsyncIterable<Dirent>) {
      count.entries += 1;
      const at = path.join(folder, entry.name);
      if (entry.isDirectory()) folders.push(at);
      else if (entry.isFile())
        count.bytes += await lstat(at).then(
          (stat) => stat.size,
          () => 0,
        );
      if (count.entries > maxEntries) break;
    }
  }
  return count;
}

export class SandboxUsage {
  readonly limits: SandboxLimits;
  private count: Count | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly root: string,
    limits: Partial<SandboxLimits> = {},
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
      const count = (this.count ??= await countFrom(this.root, this.limits.maxEntries));
      const added = await addition();
      this.refuseBeyond(count, added, shown);
      try {
        const result = await write();
        count.entries += added.folders + added.file;
        count.bytes += added.bytes;
        return result;
      } catch (error) {
        // Part of it may be on disk (its folders): counted again before the next write.
        this.stale();
        throw error;
      }
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /** The folder may have changed beyond the writes (a program run_command ran): it is counted again before the next one. */
  stale(): void {
    this.count = undefined;
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
