// PGlite is single-process: two processes opening one data folder would corrupt it. The first
// process takes an exclusive lock file; a second one stops with a clear message. A lock left by
// a process that no longer exists (killed, crashed) is taken over.
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holderPid: number,
  ) {
    super(
      `The embedded database in ${dataDir} is in use by another Dossier process (pid ${holderPid}). ` +
        `PGlite allows one process per data folder: stop that process, choose another DATA_DIR, ` +
        `or set DATABASE_URL to share a PostgreSQL database between processes.`,
    );
    this.name = "DataDirLockedError";
  }
}

export type DataDirLock = { path: string; release(): void };

type Holder = { pid: number; host: string };

function readHolder(file: string): Holder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<Holder>;
    return typeof parsed.pid === "number" ? { pid: parsed.pid, host: String(parsed.host ?? "") } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, "dossier.lock");
  // The lock is written whole to a private file, then linked into place: link() fails when the
  // lock exists, so no process ever sees a half-written lock.
  const mine = `${file}.${process.pid}`;
  writeFileSync(mine, JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }));
  try {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      try {
        linkSync(mine, file);
        return ownedLock(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = readHolder(file);
      if (holder && isHeld(holder)) throw new DataDirLockedError(dataDir, holder.pid);
      takeOverStale(file);
    }
    throw new Error(`Could not take the lock ${file}.`);
  } finally {
    rmSync(mine, { force: true });
  }
}

function isHeld(holder: Holder): boolean {
  // A lock from another machine (a shared folder) cannot be checked: treat it as held.
  return holder.host !== hostname() || isAlive(holder.pid);
}

/** Moves a dead process's lock away. Rename is atomic; if what we moved turns out to be a
 * live holder's fresh lock (another process took over first), it is put back. */
function takeOverStale(file: string): void {
  const aside = `${file}.stale-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch {
    return;
  }
  const moved = readHolder(aside);
  if (moved && isHeld(moved)) {
    try {
      linkSync(aside, file);
    } catch {
      // A third process already holds the lock; the next attempt will meet it.
    }
  }
  rmSync(aside, { force: true });
}

function ownedLock(file: string): DataDirLock {
  let released = false;
  return {
    path: file,
    release() {
      if (released) return;
      released = true;
      if (readHolder(file)?.pid === process.pid) rmSync(file, { force: true });
    },
  };
}
