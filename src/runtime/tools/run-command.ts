// The run_command tool (R15), opt-in (COMMANDS_ALLOWED): runs one program with an argument list
// in the run's sandbox folder. There is no shell: the arguments reach the program verbatim, so
// `$(…)`, `;`, globs and quotes mean nothing. The program runs in its own process group, which
// is stopped when the call ends: by the program's exit, a timeout or the run's cancellation.
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { type Tool, ToolError } from "../ports/tool.js";

export type CommandSettings = {
  timeoutMs: number;
  /** The PATH programs are looked up in; the server's other environment variables are not passed on. */
  path: string;
};

const OUTPUT_MAX_BYTES = 64 * 1024;

const cut = (text: string) =>
  Buffer.byteLength(text) > OUTPUT_MAX_BYTES ? `${Buffer.from(text).subarray(0, OUTPUT_MAX_BYTES).toString("utf8")}\n[truncated]` : text;

export function createRunCommandTool(sandboxDir: string, settings: CommandSettings): Tool {
  const cwd = path.resolve(sandboxDir);
  return {
    schema: {
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
    },
    timeoutMs: settings.timeoutMs + 1_000,
    async execute(rawArgs, context) {
      const { command, args = [] } = (rawArgs ?? {}) as { command?: unknown; args?: unknown };
      if (typeof command !== "string" || command.trim() === "" || command.includes("\0")) throw new ToolError("command must be a program name");
      if (!Array.isArray(args) || !args.every((a) => typeof a === "string" && !a.includes("\0"))) throw new ToolError("args must be a list of strings");
      await mkdir(cwd, { recursive: true });
      return new Promise<string>((resolve, reject) => {
        // Its own process group: a timeout, a cancelled run or the program's end stops everything
        // it started, so nothing it left in the background outlives the call.
        const child = spawn(command, args as string[], {
          cwd,
          shell: false,
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
          env: { PATH: settings.path, HOME: cwd, LANG: "C.UTF-8" },
        });
        const output = { stdout: [] as Buffer[], stderr: [] as Buffer[], bytes: 0 };
        let tooMuch = false;
        let timedOut = false;
        const killGroup = () => {
          try {
            if (child.pid) process.kill(-child.pid, "SIGKILL");
          } catch {
            // already gone
          }
        };
        const collect = (into: Buffer[]) => (chunk: Buffer) => {
          output.bytes += chunk.length;
          if (output.bytes > 4 * OUTPUT_MAX_BYTES) {
            tooMuch = true;
            killGroup();
          } else into.push(chunk);
        };
        child.stdout!.on("data", collect(output.stdout));
        child.stderr!.on("data", collect(output.stderr));
        const timer = setTimeout(() => {
          timedOut = true;
          killGroup();
        }, settings.timeoutMs);
        const onAbort = () => killGroup();
        context.signal.addEventListener("abort", onAbort, { once: true });
        const finish = () => {
          clearTimeout(timer);
          context.signal.removeEventListener("abort", onAbort);
          killGroup();
        };
        let settled = false;
        child.once("error", (error: NodeJS.ErrnoException) => {
          if (settled) return;
          settled = true;
          finish();
          reject(error.code === "ENOENT" ? new ToolError(`There is no program ${JSON.stringify(command)} on this server.`) : error);
        });
        const done = (code: number | null) => {
          if (settled) return;
          settled = true;
          finish();
          if (context.signal.aborted) return reject(context.signal.reason);
          if (timedOut) return reject(new ToolError(`${command} timed out after ${settings.timeoutMs} ms and was stopped.`));
          if (tooMuch) return reject(new ToolError(`${command} wrote too much output.`));
          const text = (chunks: Buffer[]) => cut(Buffer.concat(chunks).toString("utf8"));
          resolve(`exit code: ${code ?? 1}\n--- stdout ---\n${text(output.stdout)}\n--- stderr ---\n${text(output.stderr)}`);
        };
        child.once("close", (code) => done(code));
        // A background process may hold the pipes open after the program exits: the call ends
        // shortly after the exit anyway, and the group is stopped.
        child.once("exit", (code) => {
          setTimeout(() => {
            killGroup();
            child.stdout!.destroy();
            child.stderr!.destroy();
            done(code);
          }, 250).unref();
        });
      });
    },
  };
}
