// What a principal's STDIO MCP server may start. Starting a program is the operator's decision,
// and a program's arguments and environment decide what it runs as much as its path does
// (`npx -y <any package>`, `NODE_OPTIONS=--import=…`): the operator lists whole command lines
// (MCP_STDIO_COMMANDS), a principal may add arguments only after an entry ending with `…`, and may
// set only the environment names MCP_STDIO_ENV lists — never one that changes what runs.
import path from "node:path";

/** One MCP_STDIO_COMMANDS entry: the program, its fixed leading arguments, and whether a principal may add more. */
export type StdioCommandLine = { program: string; args: string[]; moreArguments: boolean };

/** A principal may add arguments after an operator's command line only where it ends with this. */
export const MORE_ARGUMENTS = "…";

/** Environment names no principal may set, whatever MCP_STDIO_ENV lists: they change what a program runs or loads. */
export const REFUSED_ENV_NAME =
  /^(NODE_OPTIONS|NODE_PATH|NODE_EXTRA_CA_CERTS|NODE_REPL_EXTERNAL_MODULE|LD_.*|DYLD_.*|PATH|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|PYTHONINSPECT|PERL5LIB|PERL5OPT|PERLLIB|RUBYOPT|RUBYLIB|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|IFS|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|GIT_.*|NPM_CONFIG_.*|UV_.*|PIP_.*|HOME|TMPDIR)$/i;

/** An entry as an operator writes it: `program arg … […]`, split on spaces. */
export function parseCommandLine(entry: string): StdioCommandLine {
  const words = entry.split(/\s+/).filter((word) => word !== "");
  const moreArguments = words.at(-1) === MORE_ARGUMENTS || words.at(-1) === "...";
  const [program = "", ...args] = moreArguments ? words.slice(0, -1) : words;
  return { program: path.isAbsolute(program) ? path.normalize(program) : program, args, moreArguments };
}

const shown = (line: StdioCommandLine) => [line.program, ...line.args, ...(line.moreArguments ? [MORE_ARGUMENTS] : [])].join(" ");

/** The error code of a stored server refused at connect time (its message names only what the principal wrote and the setting). */
export const STDIO_REFUSED = "ESTDIOREFUSED";

export type StdioIssue = { field: "command" | "args" | "env"; message: string };

/** Why this server may not start `command args` with these environment names; empty when it may. */
export function stdioRefusals(
  server: { command: string; args: readonly string[]; envNames: readonly string[] },
  allowed: readonly StdioCommandLine[],
  allowedEnv: readonly string[],
): StdioIssue[] {
  if (allowed.length === 0) {
    return [{ field: "command", message: "this server starts no local commands (MCP_STDIO_COMMANDS lists none); use an HTTP MCP server" }];
  }
  const program = path.isAbsolute(server.command) ? path.normalize(server.command) : null;
  const lines = allowed.filter((line) => line.program === program);
  if (lines.length === 0) {
    return [{ field: "command", message: `is not one of the programs MCP_STDIO_COMMANDS allows (${[...new Set(allowed.map((l) => l.program))].join(", ")})` }];
  }
  const issues: StdioIssue[] = [];
  const fits = (line: StdioCommandLine) =>
    line.args.every((arg, i) => server.args[i] === arg) && (server.args.length === line.args.length || line.moreArguments);
  if (!lines.some(fits)) {
    issues.push({
      field: "args",
      message: `must be exactly the arguments of a command line MCP_STDIO_COMMANDS lists (${lines.map(shown).join("; ")}); more may follow only where it ends with ${MORE_ARGUMENTS}`,
    });
  }
  for (const name of server.envNames) {
    if (REFUSED_ENV_NAME.test(name)) issues.push({ field: "env", message: `${name} may never be set: it changes what the program runs` });
    else if (!allowedEnv.includes(name)) {
      issues.push({ field: "env", message: `${name} is not one of the names MCP_STDIO_ENV allows (${allowedEnv.length ? allowedEnv.join(", ") : "none"})` });
    }
  }
  return issues;
}

/** The operator's entries as command lines (a plain string is parsed like an MCP_STDIO_COMMANDS entry). */
export const commandLinesOf = (entries: readonly (string | StdioCommandLine)[] = []): StdioCommandLine[] =>
  entries.map((entry) => (typeof entry === "string" ? parseCommandLine(entry) : entry));
