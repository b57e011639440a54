// What a program run_command runs may write to disk while it runs (R15). The sandbox's budgets
// (SANDBOX_MAX_BYTES, SANDBOX_MAX_ENTRIES, SANDBOX_MAX_BYTES_PER_PRINCIPAL, SANDBOX_MAX_BYTES_TOTAL)
// are checked before each file tool's write; a program writes on its own, so it is bounded twice:
//
// - One file: the program starts with RLIMIT_FSIZE set to the bytes the run may still write (the
//   least room its folder, its owner's and every folder's budgets leave), and RLIMIT_CORE to 0. A
//   write past it fails (the program gets SIGXFSZ, or EFBIG if it ignores that). The limit is set
//   by util-linux's prlimit (present on every Debian, being part of its essential set), else by
//   /bin/sh's `ulimit -f` (POSIX: 512-byte blocks, rounded down), which receives the program and
//   its arguments as positional parameters and execs them: nothing the model gave is expanded.
//   Where neither exists (a shell-less image), only the watch below bounds the program.
// - Many files: while it runs, the folder is counted every DISK_LOOK_MS (100 ms) after the last
//   count ended; the ledger learns the count, so other runs' writes see it at once. Once the folder
//   holds more than a budget allows, the program's process group is stopped and the model reads why.
//
// So a program may pass a budget by at most what it writes between two counts, one interval plus
// the count itself, each file of it no bigger than the room it started with. No count happens while
// no program runs.
import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import type { SandboxUsage } from "./sandbox-usage.js";

/** How long after a count of the folder ended the next one starts, while a program runs. */
export const DISK_LOOK_MS = 100;

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The program's file as PATH (`searchPath`) finds it from `cwd`; null when there is none. */
export function programFile(command: string, searchPath: string, cwd: string): string | null {
  if (command.includes("/")) return executable(path.resolve(cwd, command)) ? path.resolve(cwd, command) : null;
  for (const dir of searchPath.split(":").filter(Boolean)) {
    const file = path.resolve(cwd, dir, command);
    if (executable(file)) return file;
  }
  return null;
}

/** What sets a program's limits: util-linux's prlimit, else /bin/sh's ulimit, else nothing. */
export type Limiter = { prlimit: string } | { sh: string } | null;

let limiter: Limiter | undefined;

/** How this server sets a program's limits: looked up once. */
function limiterOnThisServer(): Limiter {
  if (limiter !== undefined) return limiter;
  const prlimit = ["/usr/bin/prlimit", "/bin/prlimit", "/usr/local/bin/prlimit"].find(existsSync);
  limiter = prlimit ? { prlimit } : existsSync("/bin/sh") ? { sh: "/bin/sh" } : null;
  return limiter;
}

/** What to spawn to run `command` with `args` unable to write a file past `fileBytes` bytes or a core file. */
export function limitedSpawn(command: string, args: string[], fileBytes: number, how = limiterOnThisServer()): { file: string; args: string[] } {
  const bytes = Math.max(0, Math.floor(fileBytes));
  if (how && "prlimit" in how) return { file: how.prlimit, args: [`--fsize=${bytes}:${bytes}`, "--core=0:0", "--", command, ...args] };
  if (how) {
    const script = 'ulimit -c 0 && ulimit -f "$1" || exit 126; shift; exec "$@"';
    return { file: how.sh, args: ["-c", script, "sh", String(Math.floor(bytes / 512)), command, ...args] };
  }
  return { file: command, args };
}

/**
 * Counts the folder every `intervalMs` until stopped; calls `past` (once) with why, the first time
 * the folder holds more than a budget allows.
 */
export function watchDisk(usage: Pick<SandboxUsage, "look">, intervalMs: number, past: (why: string) => void): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const next = () => {
    timer = setTimeout(() => {
      void usage.look().then(
        (why) => {
          if (stopped) return;
          if (why) {
            stopped = true;
            past(why);
          } else next();
        },
        () => !stopped && next(),
      );
    }, intervalMs);
    timer.unref();
  };
  next();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
