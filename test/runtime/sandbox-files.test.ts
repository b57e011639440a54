// R15: file tools stay inside the run's sandbox folder, and touch only regular files there.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";
import { spawnTs } from "../support/processes.js";
import { toolContext } from "../support/tool-context.js";

const context = toolContext();

function tools() {
  const root = mkdtempSync(path.join(tmpdir(), "dossier-sandbox-"));
  const sandbox = path.join(root, "run-1");
  const [write, read] = createSandboxFileTools(sandbox) as [Tool, Tool];
  return { root, sandbox, write, read };
}

describe("sandbox file tools", () => {
  it("writes and reads files below the sandbox, creating folders", async () => {
    const { sandbox, write, read } = tools();
    expect(await write.execute({ path: "notes/today.md", content: "Résumé" }, context)).toBe("Wrote 8 bytes to notes/today.md.");
    expect(readFileSync(path.join(sandbox, "notes/today.md"), "utf8")).toBe("Résumé");
    expect(await read.execute({ path: "notes/today.md" }, context)).toBe("Résumé");
  });

  it.each([["../escape.txt"], ["notes/../../escape.txt"], ["/etc/passwd"], [""]])("refuses the path %j", async (bad) => {
    const { root, sandbox, write, read } = tools();
    await expect(write.execute({ path: bad, content: "x" }, context)).rejects.toThrow(/sandbox|non-empty/);
    await expect(read.execute({ path: bad }, context)).rejects.toThrow(/sandbox|non-empty/);
    expect(() => readFileSync(path.join(root, "escape.txt"))).toThrow();
    // Refused before the folder is made: a run whose file calls were all refused leaves none.
    expect(existsSync(sandbox)).toBe(false);
  });

  it("tells what the file system refused by the model's path, never the host's", async () => {
    const { sandbox, write } = tools();
    await write.execute({ path: "notes/a.txt", content: "a" }, context);
    const refused = await write.execute({ path: "notes", content: "x" }, context).catch((error: Error) => error.message);
    expect(refused).toBe("Could not write notes: EISDIR.");
    await expect(write.execute({ path: "a\u0000b", content: "x" }, context)).rejects.toThrow("path must be a non-empty relative path");
    expect(readdirSync(sandbox)).toEqual(["notes"]);
  });

  it("makes no folder for a write whose content it refuses", async () => {
    const { sandbox, write } = tools();
    await expect(write.execute({ path: "a.txt", content: 42 }, context)).rejects.toThrow("content must be a string");
    await expect(write.execute({ path: "a.txt", content: "x".repeat(1024 * 1024 + 1) }, context)).rejects.toThrow(/over/);
    expect(existsSync(sandbox)).toBe(false);
  });

  it("refuses to follow a symlink out of the sandbox", async () => {
    const { root, sandbox, write, read } = tools();
    await write.execute({ path: "seed.txt", content: "s" }, context);
    const outside = mkdtempSync(path.join(tmpdir(), "dossier-outside-"));
    writeFileSync(path.join(outside, "secret.txt"), "secret");
    symlinkSync(outside, path.join(sandbox, "link"));
    await expect(read.execute({ path: "link/secret.txt" }, context)).rejects.toThrow(/leaves the sandbox/);
    await expect(write.execute({ path: "link/planted.txt", content: "x" }, context)).rejects.toThrow(/leaves the sandbox/);
    expect(root).not.toBe(outside);
  });

  it("refuses every way out that a symlink made by run_command opens", async () => {
    const { root, sandbox, write, read } = tools();
    await write.execute({ path: "seed.txt", content: "s" }, context);
    const outside = mkdtempSync(path.join(tmpdir(), "dossier-outside-"));
    writeFileSync(path.join(outside, "secret.txt"), "secret");
    const runCommand = createRunCommandTool(sandbox, { timeoutMs: 5_000, path: process.env.PATH ?? "/usr/bin:/bin" });
    const ln = (target: string, name: string) => runCommand.execute({ command: "ln", args: ["-s", target, name] }, context);
    await ln(path.join(outside, "secret.txt"), "file-link");
    await ln(outside, "dir-link");
    await ln(path.join(outside, "planted-by-link.txt"), "dangling-link");
    // The link itself as the file, a folder below a link that does not exist yet, a dangling link.
    await expect(read.execute({ path: "file-link" }, context)).rejects.toThrow(/leaves the sandbox/);
    await expect(write.execute({ path: "file-link", content: "overwritten" }, context)).rejects.toThrow(/leaves the sandbox/);
    await expect(write.execute({ path: "dir-link/new/deeper.txt", content: "x" }, context)).rejects.toThrow(/leaves the sandbox/);
    await expect(write.execute({ path: "dangling-link", content: "x" }, context)).rejects.toThrow(/leaves the sandbox/);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret");
    expect(readdirSync(outside)).toEqual(["secret.txt"]);
    // Links that stay inside still work.
    await ln("seed.txt", "inner-link");
    expect(await read.execute({ path: "inner-link" }, context)).toBe("s");
    expect(root).not.toBe(outside);
  });

  it("answers a missing file with a readable error", async () => {
    const { read, write } = tools();
    await write.execute({ path: "a.txt", content: "a" }, context);
    await expect(read.execute({ path: "missing.txt" }, context)).rejects.toThrow("There is no file missing.txt in the sandbox.");
  });

  it("makes the sandbox folder on first use only, once for calls at the same time", async () => {
    const { sandbox, write, read } = tools();
    // Long enough for a folder made when the tools are (as it was) to be there.
    await setTimeout(50);
    expect(existsSync(sandbox)).toBe(false);
    await expect(read.execute({ path: "missing.txt" }, context)).rejects.toThrow("There is no file missing.txt in the sandbox.");
    // A read makes no folder: there is nothing in it to read.
    expect(existsSync(sandbox)).toBe(false);
    const fresh = tools();
    const results = await Promise.all([
      fresh.write.execute({ path: "a.txt", content: "a" }, context),
      fresh.write.execute({ path: "deep/b.txt", content: "b" }, context),
      fresh.read.execute({ path: "c.txt" }, context).catch((error: Error) => error.message),
    ]);
    expect(results).toEqual(["Wrote 1 bytes to a.txt.", "Wrote 1 bytes to deep/b.txt.", "There is no file c.txt in the sandbox."]);
    expect(readdirSync(fresh.sandbox).sort()).toEqual(["a.txt", "deep"]);
    expect(await write.execute({ path: "later.txt", content: "l" }, context)).toBe("Wrote 1 bytes to later.txt.");
  });

  it("refuses a FIFO at once, eight reads at a time and a write with or without a reader, and every file operation still works after", async () => {
    const { sandbox, write } = tools();
    await write.execute({ path: "seed.txt", content: "seed" }, context);
    execFileSync("mkfifo", [path.join(sandbox, "p")]);
    // In a process of its own: a read that blocked on the FIFO would hold the file-system threads
    // of the process running it for good. It is killed if it has not answered in time.
    const child = spawnTs("test/support/sandbox-fifo-process.ts", { args: [sandbox] });
    try {
      const line = await child.waitForOutput(/^RESULT .*$/m, 40_000);
      const refused = "p is a FIFO (named pipe), not a regular file: only regular files can be read or written.";
      expect(JSON.parse(line.slice("RESULT ".length))).toEqual({
        reads: Array.from({ length: 8 }, () => `error: ${refused}`),
        writeUnread: "error: p is not a regular file: only regular files can be read or written.",
        writeRead: `error: ${refused}`,
        // Nothing was written into the pipe: its reader finds it empty.
        reached: "0 bytes",
        seed: "seed",
      });
    } finally {
      child.child.kill("SIGKILL");
      await child.exited;
    }
  }, 60_000);

  it("reads at most 1 MiB of a file, however large: a 2 GiB sparse file answers its first MiB, marked truncated", async () => {
    const { sandbox, write, read } = tools();
    await write.execute({ path: "seed.txt", content: "seed" }, context);
    const big = path.join(sandbox, "big.bin");
    writeFileSync(big, "a");
    truncateSync(big, 2 * 1024 ** 3);
    const text = (await read.execute({ path: "big.bin" }, context)) as string;
    expect(text).toBe(`a${"\0".repeat(1024 * 1024 - 1)}\n[truncated]`);
    expect(statSync(big).size).toBe(2 * 1024 ** 3);
    // A character cut by the limit is left out, not garbled; a file within the limit is read whole.
    writeFileSync(path.join(sandbox, "accents.txt"), `a${"é".repeat(1024 * 1024)}`);
    expect(await read.execute({ path: "accents.txt" }, context)).toBe(`a${"é".repeat((1024 * 1024 - 1 - 1) / 2)}\n[truncated]`);
    writeFileSync(path.join(sandbox, "exact.txt"), "é".repeat(512 * 1024));
    expect(await read.execute({ path: "exact.txt" }, context)).toBe("é".repeat(512 * 1024));
  });

  it("refuses a folder as a file by the model's path", async () => {
    const { write, read } = tools();
    await write.execute({ path: "notes/a.txt", content: "a" }, context);
    await expect(read.execute({ path: "notes" }, context)).rejects.toThrow("notes is a folder, not a regular file: only regular files can be read or written.");
  });
});
