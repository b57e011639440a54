// File read and write inside the run's own sandbox folder (R15). Paths are relative to the
// sandbox; anything that would leave it (.., absolute paths, a symlink anywhere on the path that
// points out, a dangling one) is refused.
import { lstat, mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ToolSchema } from "../ports/model.js";
import { type Tool, ToolError } from "../ports/tool.js";

const MAX_FILE_BYTES = 1024 * 1024;

const succeeds = (work: Promise<unknown>) =>
  work.then(
    () => true,
    () => false,
  );

/** Where `relative` names inside `root`, as written (before any symlink is followed); a path that is not one is refused. */
function namedInside(root: string, relative: unknown): string {
  if (typeof relative !== "string" || relative.trim() === "" || relative.includes("\0")) throw new ToolError("path must be a non-empty relative path");
  if (path.isAbsolute(relative)) throw new ToolError("path must be relative to the sandbox");
  const target = path.resolve(root, relative);
  if (target !== root && !target.startsWith(`${root}${path.sep}`)) throw new ToolError("path leaves the sandbox");
  return target;
}

/** `target` (namedInside) once it is known to stay inside `root` with every symlink on it followed. */
async function resolveInside(root: string, target: string): Promise<string> {
  // Where the path really leads once every symlink on it is followed (a program run by
  // run_command can make them): the file itself, or its nearest existing folder.
  const realRoot = await realpath(root);
  const real = await realLocation(target);
  if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`)) throw new ToolError("path leaves the sandbox");
  return target;
}

/** The real path of `target`, or of its nearest existing ancestor joined with the rest; a dangling symlink has none. */
async function realLocation(target: string): Promise<string> {
  let existing = target;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(existing), ...rest);
    } catch {
      // A symlink that leads nowhere would be followed by a write to wherever it points.
      if (
        await lstat(existing).then(
          (stat) => stat.isSymbolicLink(),
          () => false,
        )
      )
        throw new ToolError("path leaves the sandbox");
      const parent = path.dirname(existing);
      if (parent === existing) return target;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
}

// The schemas are the same for every run: one object each, so the request budget counts their
// tokens once (memo-cache.ts remembers schema lists by identity), not once per run.
const WRITE_FILE_SCHEMA: ToolSchema = {
  name: "write_file",
  description: "Writes a UTF-8 text file in this run's sandbox folder (paths are relative to it).",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, content: { type: "string" } },
    required: ["path", "content"],
  },
};
const READ_FILE_SCHEMA: ToolSchema = {
  name: "read_file",
  description: "Reads a UTF-8 text file from this run's sandbox folder.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

/**
 * The file tools of the run whose sandbox is `sandboxDir`. The folder is created on the tools'
 * first call, once (calls at the same time wait for the same creation): most runs never use a
 * file tool, and a run that does not leaves no folder behind.
 */
export function createSandboxFileTools(sandboxDir: string): Tool[] {
  const root = path.resolve(sandboxDir);
  let created: Promise<unknown> | undefined;
  const ready = () => {
    // A creation that failed (a full disk, say) is tried again on the next call.
    created ??= mkdir(root, { recursive: true }).catch((error: unknown) => {
      created = undefined;
      throw error;
    });
    return created;
  };
  /** Whether the folder is there (made by a write, or by a program run_command ran), once a creation under way ends. */
  const folderExists = () => succeeds(created ?? lstat(root));
  return [
    {
      schema: WRITE_FILE_SCHEMA,
      async execute(args) {
        // Arguments a call gets wrong are refused before the folder is made: a run whose file
        // calls were all refused leaves no folder behind.
        const { path: relative, content } = args as { path?: unknown; content?: unknown };
        if (typeof content !== "string") throw new ToolError("content must be a string");
        if (Buffer.byteLength(content) > MAX_FILE_BYTES) throw new ToolError(`content is over ${MAX_FILE_BYTES} bytes`);
        const named = namedInside(root, relative);
        await ready();
        const target = await resolveInside(root, named);
        // What the file system refuses (a folder at that path, say) is told by the path the model gave, not the host's.
        await mkdir(path.dirname(target), { recursive: true })
          .then(() => writeFile(target, content, "utf8"))
          .catch((error: NodeJS.ErrnoException) => {
            throw new ToolError(`Could not write ${path.relative(root, target) || "."}: ${error.code ?? "failed"}.`);
          });
        return `Wrote ${Buffer.byteLength(content)} bytes to ${path.relative(root, target)}.`;
      },
    },
    {
      schema: READ_FILE_SCHEMA,
      async execute(args) {
        const named = namedInside(root, (args as { path?: unknown }).path);
        const missing = () => new ToolError(`There is no file ${path.relative(root, named) || "."} in the sandbox.`);
        // No folder yet: no file either, and a read makes none.
        if (!(await folderExists())) throw missing();
        const target = await resolveInside(root, named);
        const text = await readFile(target, "utf8").catch(() => {
          throw missing();
        });
        return text.length > MAX_FILE_BYTES ? `${text.slice(0, MAX_FILE_BYTES)}\n[truncated]` : text;
      },
    },
  ];
}
