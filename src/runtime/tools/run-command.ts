// The run_command tool (R15), opt-in (COMMANDS_ALLOWED): runs one program with an argument list
// in the run's sandbox folder. There is no shell: the arguments reach the program verbatim, so
// `$(…)`, `;`, globs and quotes mean nothing. A timeout kills the program.
import { execFile } from "node:child_process";
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
        execFile(
          command,
          args as string[],
          {
            cwd,
            shell: false,
            timeout: settings.timeoutMs,
            killSignal: "SIGKILL",
            maxBuffer: 4 * OUTPUT_MAX_BYTES,
            signal: context.signal,
            env: { PATH: settings.path, HOME: cwd, LANG: "C.UTF-8" },
          },
          (error, stdout, stderr) => {
            const failure = error as (NodeJS.ErrnoException & { killed?: boolean; code?: string | number }) | null;
            if (failure?.code === "ENOENT") return reject(new ToolError(`There is no program ${JSON.stringify(command)} on this server.`));
            if (failure?.killed && !context.signal.aborted) {
              return reject(new ToolError(`${command} timed out after ${settings.timeoutMs} ms and was stopped.`));
            }
            if (failure?.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") return reject(new ToolError(`${command} wrote too much output.`));
            if (context.signal.aborted) return reject(context.signal.reason);
            const exitCode = typeof failure?.code === "number" ? failure.code : failure ? 1 : 0;
            resolve(`exit code: ${exitCode}\n--- stdout ---\n${cut(String(stdout))}\n--- stderr ---\n${cut(String(stderr))}`);
          },
        );
      });
    },
  };
}
