// The run_command tool (R15), opt-in (COMMANDS_ALLOWED): runs one program with an argument list
// in the run's sandbox folder. There is no shell: the arguments reach the program verbatim, so
// `$(…)`, `;`, globs and quotes mean nothing. The program runs in its own process group, which
// is stopped when the call ends: by the program's exit, a timeout, the run's cancellation, or the
// sandbox's disk budgets, which it cannot pass by more than command-disk.ts states. What it starts
// is stopped with it, having left the group or not: command-containment.ts says how, and where
// that holds (a PID namespace per call where the machine allows one).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { ToolSchema } from "../ports/model.js";
import { schemaPer } from "./schema-per.js";
import { type Tool, ToolError } from "../ports/tool.js";
import type { SandboxUsage } from "./sandbox-usage.js";
import { DISK_LOOK_MS, limitedSpawn, programFile, watchDisk } from "./command-disk.js";
import { type Containment, containedSpawn, containmentOnThisServer, stopCall } from "./command-containment.js";

export type CommandSettings = {
  timeoutMs: number;
  /** The PATH programs are looked up in; the server's other environment variables are not passed on. */
  path: string;
  /** How often the sandbox folder is counted while a program runs (command-disk.ts; DISK_LOOK_MS). */
  diskLookMs?: number;
  /** "session": no PID namespace even where one can be made (command-containment.ts); by default one is. */
  containment?: "session";
};

const OUTPUT_MAX_BYTES = 64 * 1024;

const cut = (text: string) =>
  Buffer.byteLength(text) > OUTPUT_MAX_BYTES ? `${Buffer.from(text).subarray(0, OUTPUT_MAX_BYTES).toString("utf8")}\n[truncated]` : text;

/** One schema per settings (the server's): see schema-per.ts. */
const schemaFor = schemaPer(
  (settings: CommandSettings): ToolSchema => ({
    name: "run_command",
    description: `Runs a program (no shell) in this run's sandbox folder and returns its exit code and output. It is stopped after ${settings.timeoutMs} ms.`,
    parameters: {
      type: "object",
      properties: {
        command: { type: "string", description: "The program, e.g. ls or python3." },
        args: { type: "array", items: { type: "string" }, description: "Its arguments, one string each; nothing is expanded." },
      },
      required: ["command"],
    },
  }),
);

/**
 * `usage`: the file tools' count of the folder. It bounds what the program may write while it runs
 * (command-disk.ts), and is counted again after it ran (it may have changed anything), before the
 * call's result is returned: what the program left counts against the run's owner's budget
 * (sandbox-ledger.ts) before another of its runs writes.
 */
export function createRunCommandTool(sandboxDir: string, settings: CommandSettings, usage?: Pick<SandboxUsage, "recount" | "room" | "look">): Tool {
  const cwd = path.resolve(sandboxDir);
  return {
    schema: schemaFor(settings),
    timeoutMs: settings.timeoutMs + 1_000,
    async execute(rawArgs, context) {
      const { command, args } = commandOf(rawArgs);
      await mkdir(cwd, { recursive: true });
      // Spawned through the limit's setter (command-disk.ts) and the containment: a missing program is told apart first.
      if (!programFile(command, settings.path, cwd)) throw noProgram(command);
      const contained = await containmentOnThisServer(settings.containment === "session");
      try {
        const room = await usage?.room();
        return await runProgram({ command, args, cwd, settings, signal: context.signal, contained, disk: usage && { usage, room: room! } });
      } finally {
        await usage?.recount();
      }
    },
  };
}

function commandOf(rawArgs: unknown): { command: string; args: string[] } {
  const { command, args = [] } = (rawArgs ?? {}) as { command?: unknown; args?: unknown };
  if (typeof command !== "string" || command.trim() === "" || command.includes("\0")) throw new ToolError("command must be a program name");
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string" && !a.includes("\0"))) throw new ToolError("args must be a list of strings");
  return { command, args: args as string[] };
}

const noProgram = (command: string) => new ToolError(`There is no program ${JSON.stringify(command)} on this server.`);

type ProgramRun = {
  command: string;
  args: string[];
  cwd: string;
  settings: CommandSettings;
  signal: AbortSignal;
  contained: Containment;
  /** The folder's count, and the bytes the run may still write when the program starts. */
  disk?: { usage: Pick<SandboxUsage, "look">; room: number };
};

function runProgram({ command, args, cwd, settings, signal, contained, disk }: ProgramRun): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const spawned = containedSpawn(disk ? limitedSpawn(command, args, disk.room) : { file: command, args }, contained);
    // Its own process group (and session): a timeout, a cancelled run, the disk budgets or the
    // program's end stop it, and the call's end everything it started (command-containment.ts).
    const child = spawn(spawned.file, spawned.args, {
      cwd,
      shell: false,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: settings.path, HOME: cwd, LANG: "C.UTF-8", ...markerEnv(spawned.marker) },
    });
    const killGroup = () => stopGroup(child);
    const output = collectOutput(child, killGroup);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, settings.timeoutMs);
    const onAbort = () => killGroup();
    signal.addEventListener("abort", onAbort, { once: true });
    let pastBudget: string | undefined;
    const watch = disk
      ? watchDisk(disk.usage, settings.diskLookMs ?? DISK_LOOK_MS, (why) => {
          pastBudget = why;
          killGroup();
        })
      : undefined;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      watch?.stop();
      signal.removeEventListener("abort", onAbort);
      killGroup();
      if (child.pid) void stopCall(child.pid, spawned.marker).then(outcome);
      else outcome();
    };
    child.once("error", (error: NodeJS.ErrnoException) => settle(() => reject(error.code === "ENOENT" ? noProgram(command) : error)));
    const done = (code: number | null, exitSignal: NodeJS.Signals | null) =>
      settle(() => {
        if (signal.aborted) return reject(signal.reason);
        if (timedOut) return reject(new ToolError(`${command} timed out after ${settings.timeoutMs} ms and was stopped.`));
        if (output.tooMuch()) return reject(new ToolError(`${command} wrote too much output.`));
        resolve(output.report(code) + diskNote(command, pastBudget, exitSignal === "SIGXFSZ" ? disk?.room : undefined));
      });
    child.once("close", (code, exitSignal) => done(code, exitSignal));
    // A background process may hold the pipes open after the program exits: the call ends
    // shortly after the exit anyway, and the group is stopped.
    child.once("exit", (code, exitSignal) => {
      setTimeout(() => {
        killGroup();
        child.stdout!.destroy();
        child.stderr!.destroy();
        done(code, exitSignal);
      }, 250).unref();
    });
  });
}

/** Why the program was stopped for the sandbox's disk budgets, for the model to read; empty when it was not. */
function diskNote(command: string, pastBudget: string | undefined, fileRoom: number | undefined): string {
  if (pastBudget) return `\n--- stopped ---\n${command} was stopped while it ran: ${pastBudget}. Remove files you no longer need before writing more.`;
  if (fileRoom === undefined) return "";
  return `\n--- stopped ---\n${command} was stopped writing a file past ${fileRoom} bytes, what the sandbox could still take. Remove files you no longer need before writing more.`;
}

const markerEnv = (marker: string | undefined): Record<string, string> => {
  if (!marker) return {};
  const [name, value] = marker.split("=");
  return { [name!]: value! };
};

function stopGroup(child: ChildProcess): void {
  try {
    if (child.pid) process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Keeps the program's output up to a bound; a program that writes far more is stopped. */
function collectOutput(child: ChildProcess, killGroup: () => void) {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  let bytes = 0;
  let tooMuch = false;
  const collect = (into: Buffer[]) => (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > 4 * OUTPUT_MAX_BYTES) {
      tooMuch = true;
      killGroup();
    } else into.push(chunk);
  };
  child.stdout!.on("data", collect(stdout));
  child.stderr!.on("data", collect(stderr));
  const text = (chunks: Buffer[]) => cut(Buffer.concat(chunks).toString("utf8"));
  return {
    tooMuch: () => tooMuch,
    report: (code: number | null) => `exit code: ${code ?? 1}\n--- stdout ---\n${text(stdout)}\n--- stderr ---\n${text(stderr)}`,
  };
}
