// Counting a sandbox folder from disk: its files and folders and the bytes of its files.
import type { Dirent } from "node:fs";
import { lstat, opendir } from "node:fs/promises";
import path from "node:path";

export type Count = { entries: number; bytes: number };

/** The files and folders below `root` and their bytes, counted until past `maxEntries` (more need not be known). */
export async function countFrom(root: string, maxEntries: number): Promise<Count> {
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
