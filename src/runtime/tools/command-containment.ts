// What keeps a program run_command starts from outliving its call (R15). Whatever the program
// starts, setsid or not, is stopped when the call ends: by the program's exit, a timeout, the run's
// cancellation, the sandbox's disk budgets or too much output. Which way holds is found out once
// per server process, at the first call (or the start's log line), and kept:
//
// - A PID namespace per call, where the machine lets one be made: util-linux's `unshare --pid`
//   (as root), else `unshare --user --map-current-user --pid` (an unprivileged server where user
//   namespaces are allowed; the program then sees itself as the server's user in a user namespace
//   of its own). The program itself stays in the server's namespace and keeps its pid, exit code
//   and signals; everything it starts is born in the call's namespace, whose first process is an
//   idle `sleep` the call starts before the program (in its process group, its output going
//   nowhere). The program is not that first process itself: the kernel ignores the signals a
//   namespace's first process has no handler for, the file limit's SIGXFSZ included. When the call
//   ends the process group is stopped, the idle process with it, and the kernel then kills every
//   process in the namespace, whatever session or group it moved to; the call returns once none of
//   them runs (a zombie may wait for its adopter). /proc is left as it is (no --mount-proc): the
//   program still sees the machine's processes, as before.
// - Otherwise (no unshare, no dash or /bin/sh passing the environment on unchanged, namespaces
//   refused): the program's process group as before, and, when the call ends, every process of
//   its session and every process of the server's user whose environment carries the call's own
//   marker (DOSSIER_COMMAND_CALL=<random id>, which the program's environment then holds too),
//   swept from /proc until none is left. A program that clears its environment and leaves its
//   session (`env -i setsid …`) escapes this sweep and can outlive its call, its writes
//   uncounted by the sandbox's budgets.
//
// Either way the call's end reads the stat file of every process in /proc, usually twice (about
// 4 ms of the server's CPU per call with 150 processes on the machine).
//
// Neither holds against a program running as root that sets out to leave (it may enter the
// machine's namespace through /proc/1/ns/pid): run_command is not a container (README, Security).
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";

export type Containment = { kind: "pid-namespace"; unshare: string; flags: string[]; sh: string; sleep: string } | { kind: "session" };

/** The environment variable whose value names one call, where the session sweep stops its programs. */
export const CALL_MARKER = "DOSSIER_COMMAND_CALL";

const SESSION: Containment = { kind: "session" };
const firstFile = (files: string[]) => files.find((file) => existsSync(file));
// The namespace's first process, idle, then the program in place of the shell: nothing the model
// gave is expanded ("$@" are the program and its arguments), and the environment reaches it as the
// server set it (dash adds PWD; a shell that adds more is not used, see probe).
const SCRIPT = '"$1" 2147483647 </dev/null >/dev/null 2>&1 & shift; unset PWD OLDPWD SHLVL; exec "$@"';

/**
 * What to spawn to run `file` with `args` contained by `how`; `marker` (NAME=value), where the
 * session sweep holds, goes into the program's environment and to stopCall.
 */
export function containedSpawn(program: { file: string; args: string[] }, how: Containment): { file: string; args: string[]; marker?: string } {
  if (how.kind === "session") return { ...program, marker: `${CALL_MARKER}=${randomUUID()}` };
  return { file: how.unshare, args: [...how.flags, "--", how.sh, "-c", SCRIPT, "sh", how.sleep, program.file, ...program.args] };
}

let onThisServer: Promise<Containment> | undefined;

/**
 * How this server contains programs: a PID namespace where one can be made, found out once; the
 * session sweep alone when `sessionOnly` (a server's setting, or a test of that way).
 */
export function containmentOnThisServer(sessionOnly = false): Promise<Containment> {
  if (sessionOnly) return Promise.resolve(SESSION);
  onThisServer ??= probe();
  return onThisServer;
}

/** The line the server's start logs, for operators. */
export function containmentNote(how: Containment): { level: "info" | "warn"; message: string } {
  if (how.kind === "pid-namespace") {
    return {
      level: "info",
      message: `run_command: each call's programs run in a PID namespace of their own (unshare ${how.flags.join(" ")}): none outlives its call`,
    };
  }
  return {
    level: "warn",
    message:
      "run_command: no PID namespace can be made here; a call's process group, session and marked processes are stopped when it ends, but a program that clears its environment and leaves its session (env -i setsid) can outlive its call",
  };
}

const PROBE_PATH = "/usr/bin:/bin";

async function probe(): Promise<Containment> {
  const unshare = firstFile(["/usr/bin/unshare", "/bin/unshare", "/usr/local/bin/unshare"]);
  const sleep = firstFile(["/usr/bin/sleep", "/bin/sleep"]);
  const env = firstFile(["/usr/bin/env", "/bin/env"]);
  const sh = firstFile(["/bin/dash", "/usr/bin/dash", "/bin/sh"]);
  if (!unshare || !sleep || !env || !sh) return SESSION;
  for (const flags of [["--pid"], ["--user", "--map-current-user", "--pid"]]) {
    const how: Containment = { kind: "pid-namespace", unshare, flags, sh, sleep };
    // A child of the program is the namespace's second process, and the program gets the environment unchanged.
    const second = await outputOf(containedSpawn({ file: sh, args: ["-c", `${sh} -c 'echo $$'; exit 0`] }, how));
    if (second === "2\n" && (await outputOf(containedSpawn({ file: env, args: [] }, how))) === `PATH=${PROBE_PATH}\n`) return how;
  }
  return SESSION;
}

function outputOf(spawned: { file: string; args: string[] }): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(spawned.file, spawned.args, { detached: true, stdio: ["ignore", "pipe", "ignore"], env: { PATH: PROBE_PATH } });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.once("error", () => resolve(""));
    child.once("close", () => {
      void stopCall(child.pid!).then(() => resolve(out));
    });
  });
}

type Stat = { state: string; group: number; session: number };

function statOf(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [state, , group, session] = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: state!, group: Number(group), session: Number(session) };
  } catch {
    return undefined;
  }
}

/** Every process on the machine that has not ended (zombies have), but the server. */
function liveProcesses(): Array<{ pid: number; stat: Stat }> {
  let names: string[] = [];
  try {
    names = readdirSync("/proc");
  } catch {
    // no /proc: the process group, stopped already, is all there is
  }
  const live: Array<{ pid: number; stat: Stat }> = [];
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const stat = statOf(pid);
    if (stat && stat.state !== "Z" && stat.state !== "X") live.push({ pid, stat });
  }
  return live;
}

function carries(pid: number, marker: string, uid: number | undefined): boolean {
  try {
    if (uid !== undefined && statSync(`/proc/${pid}`).uid !== uid) return false;
    return readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(marker);
  } catch {
    return false;
  }
}

const namespaceOf = (pid: number) => {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
};

/**
 * Whether `pid` is the first process of a PID namespace of its own with no other process of it
 * left: stopped, it waits for their reaping, which is up to whoever adopted them, not the call.
 */
function firstOfEmptiedNamespace(pid: number, live: Array<{ pid: number }>): boolean {
  try {
    // Its pid in each namespace it is in, the machine's first: "NSpid: 4012 1".
    const ids = (/^NSpid:(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "").trim().split(/\s+/);
    if (ids.length < 2 || ids.at(-1) !== "1") return false;
  } catch {
    return false;
  }
  const namespace = namespaceOf(pid);
  return namespace !== undefined && !live.some((other) => other.pid !== pid && namespaceOf(other.pid) === namespace);
}

/** The live processes of the call: its process group and session, and those carrying its marker. */
function processesOf(leader: number, marker: string | undefined): number[] {
  const uid = process.getuid?.();
  const live = liveProcesses();
  return live
    .filter(({ pid, stat }) => stat.group === leader || stat.session === leader || (marker !== undefined && carries(pid, marker, uid)))
    .map(({ pid }) => pid)
    .filter((pid) => !firstOfEmptiedNamespace(pid, live));
}

const kill = (pid: number) => {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone, or not the server's to stop
  }
};

/**
 * Stops the call whose program is `leader` (its process group; its session and the processes
 * carrying `marker` where no namespace holds them) and resolves once none of them runs. In a
 * namespace, the idle first process is of the group: its end ends everything in the namespace.
 */
export async function stopCall(leader: number, marker?: string): Promise<void> {
  kill(-leader);
  // A process may fork while the last look ran: look again until one finds nothing (bounded).
  for (let round = 0; round < 200; round++) {
    const left = processesOf(leader, marker);
    if (left.length === 0) return;
    left.forEach(kill);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
