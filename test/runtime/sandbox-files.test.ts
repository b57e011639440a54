// R15: file tools stay inside the run's sandbox folder.
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";
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
});
