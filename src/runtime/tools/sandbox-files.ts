// File read and write inside the run's own sandbox folder (R15). Paths are relative to the
// sandbox; anything that would leave it (.., absolute paths, a symlink anywhere on the path that
// points out, a dangling one) is refused. Only regular files are read or written: a FIFO or a
// device a program made there is refused without waiting on it (an open or a read that blocked
// would hold one of the few threads every file operation of the server shares), and a read takes
// at most MAX_FILE_BYTES, however large the file. What a write may add is bounded (sandbox-usage.ts).
import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, mkdir, open, realpath } from "node:fs/promises";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { ToolSchema } from "../ports/model.js";
import { type Tool, ToolError } from "../ports/tool.js";
import { SandboxUsage } from "./sandbox-usage.js";

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

/** Where `target` (namedInside) really leads, every symlink on it followed, once that is known to stay inside `root`. */
async function resolveInside(root: string, target: string): Promise<string> {
  // Where the path really leads once every symlink on it is followed (a program run by
  // run_command can make them): the file itself, or its nearest existing folder.
  const realRoot = await realpath(root);
  const real = await realLocation(target);
  if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`)) throw new ToolError("path leaves the sandbox");
  return real;
}

// Opened by the real path, which no symlink may replace in the meantime (O_NOFOLLOW); a FIFO opens
// at once instead of waiting for the other end (O_NONBLOCK), and is then refused by what it is.
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0);
// No O_TRUNC: nothing is cut before the opened file is known to be a regular one.
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0);

/** What a path that is not a regular file is, in the model's words. */
function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return "a folder";
  if (stat.isFIFO()) return "a FIFO (named pipe)";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  if (stat.isSocket()) return "a socket";
  return "not a regular file";
}

/** `handle`, once its file is a regular one; otherwise it is closed and the call refused, by the model's path. */
async function regularFile(handle: FileHandle, relative: string): Promise<FileHandle> {
  const stat = await handle.stat().catch(async (error: unknown) => {
    await handle.close();
    throw error;
  });
  if (stat.isFile()) return handle;
  await handle.close();
  throw notRegular(relative, kindOf(stat));
}

const notRegular = (relative: string, kind?: string) =>
  new ToolError(`${relative} is ${kind ? `${kind}, ` : ""}not a regular file: only regular files can be read or written.`);

/** At most MAX_FILE_BYTES of the file's text (a character cut in two is left out), marked when there was more. */
async function readCapped(handle: FileHandle): Promise<string> {
  const buffer = Buffer.allocUnsafe(MAX_FILE_BYTES + 1);
  let filled = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, null);
    if (bytesRead === 0) break;
    filled += bytesRead;
    if (filled === buffer.length) break;
  }
  if (filled <= MAX_FILE_BYTES) return buffer.toString("utf8", 0, filled);
  return `${new StringDecoder("utf8").write(buffer.subarray(0, MAX_FILE_BYTES))}\n[truncated]`;
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

/** Writes `content` to the regular file at `real` (its folders made), refusing by `shown`, the model's path. */
async function writeRegular(real: string, shown: string, content: string): Promise<void> {
  // What the file system refuses (a folder at that path, say) is told by the path the model gave, not the host's.
  const handle = await mkdir(path.dirname(real), { recursive: true })
    .then(() => open(real, WRITE_FLAGS, 0o666))
    .catch((error: NodeJS.ErrnoException) => {
      // ENXIO: a FIFO no program reads (or a socket).
      if (error.code === "ENXIO") throw notRegular(shown);
      throw new ToolError(`Could not write ${shown}: ${error.code ?? "failed"}.`);
    });
  await regularFile(handle, shown);
  try {
    await handle.truncate(0);
    await handle.writeFile(content, "utf8");
  } catch (error) {
    throw new ToolError(`Could not write ${shown}: ${(error as NodeJS.ErrnoException).code ?? "failed"}.`);
  } finally {
    await handle.close();
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
 * file tool, and a run that does not leaves no folder behind. Writes keep within `usage`'s bounds
 * (sandbox-usage.ts): one attempt's, shared with its run_command.
 */
export function createSandboxFileTools(sandboxDir: string, usage = new SandboxUsage(path.resolve(sandboxDir))): Tool[] {
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
        const shown = path.relative(root, named) || ".";
        usage.checkPath(relative as string, shown);
        await ready();
        const real = await resolveInside(root, named);
        const bytes = Buffer.byteLength(content);
        await usage.write(
          shown,
          () => usage.additionOf(real, bytes),
          () => writeRegular(real, shown, content),
        );
        return `Wrote ${bytes} bytes to ${shown}.`;
      },
    },
    {
      schema: READ_FILE_SCHEMA,
      async execute(args) {
        const named = namedInside(root, (args as { path?: unknown }).path);
        const missing = () => new ToolError(`There is no file ${path.relative(root, named) || "."} in the sandbox.`);
        // No folder yet: no file either, and a read makes none.
        if (!(await folderExists())) throw missing();
        const real = await resolveInside(root, named);
        const shown = path.relative(root, named) || ".";
        const handle = await open(real, READ_FLAGS).catch((error: NodeJS.ErrnoException) => {
          if (error.code === "ENXIO") throw notRegular(shown);
          throw missing();
        });
        await regularFile(handle, shown);
        try {
          return await readCapped(handle);
        } catch (error) {
          throw new ToolError(`Could not read ${shown}: ${(error as NodeJS.ErrnoException).code ?? "failed"}.`);
        } finally {
          await handle.close();
        }
      },
    },
  ];
}
