// R15: a program run_command runs cannot write past the sandbox's disk budgets by more than
// command-disk.ts states: one file stops at the room the run had when it started (RLIMIT_FSIZE),
// many files are stopped by the count of the folder while it runs. The model reads why; the
// owner's other budgets and other principals' runs are unaffected.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { limitedSpawn } from "../../src/runtime/tools/command-disk.js";
import { createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";
import { type FolderRun, SandboxLedger } from "../../src/runtime/tools/sandbox-ledger.js";
import { type SandboxLimits, SandboxUsage } from "../../src/runtime/tools/sandbox-usage.js";
import { toolContext } from "../support/tool-context.js";

const context = toolContext();
const MB = 1024 * 1024;
const settings = { timeoutMs: 20_000, path: process.env.PATH ?? "/usr/bin:/bin", diskLookMs: 20 };

/** Bytes of the files below `dir`, as the disk holds them. */
const bytesOn = (dir: string) =>
  execFileSync("find", [dir, "-type", "f", "-printf", "%s\n"])
    .toString()
    .split("\n")
    .filter(Boolean)
    .reduce((sum, size) => sum + Number(size), 0);

/** Alice's runs a1 and a2, Bob's b1, over one ledger; alice may hold 1 MB, everyone 64 MB. */
function instance() {
  const root = mkdtempSync(path.join(tmpdir(), "dossier-cmd-disk-"));
  const owners: Record<string, string> = { a1: "alice", a2: "alice", b1: "bob" };
  const runs = async (ids: readonly string[]): Promise<FolderRun[]> => ids.map((id) => ({ id, ownerId: owners[id]!, endedAt: null }));
  const ledger = new SandboxLedger({ dir: root, budgets: { perPrincipal: MB, total: 64 * MB }, runs });
  const attempt = (run: string, limits: Partial<SandboxLimits> = {}) => {
    const sandbox = path.join(root, run);
    const usage = new SandboxUsage(sandbox, limits, { ledger, runId: run, owner: owners[run]! });
    const [write] = createSandboxFileTools(sandbox, usage) as [Tool, Tool];
    const command = createRunCommandTool(sandbox, settings, usage);
    return {
      sandbox,
      write: (file: string, bytes: number) => write.execute({ path: file, content: "x".repeat(bytes) }, context),
      run: (command_: string, args: string[]) => command.execute({ command: command_, args }, context),
    };
  };
  return { root, ledger, attempt };
}

// Each program writes 32 MB at most, then exits: unbounded, it would hold 32 times alice's budget.
const manyFiles = "import os\nfor i in range(8192):\n    with open(f'f{i}', 'wb') as f: f.write(b'x' * 16384)\n";

describe("run_command's disk budgets", () => {
  it("stops a program writing one huge file at the bytes the run may still write", async () => {
    const { ledger, attempt } = instance();
    const [a1, a2, b1] = [attempt("a1"), attempt("a2"), attempt("b1")];
    expect(await a2.write("kept.txt", 100_000)).toBe("Wrote 100000 bytes to kept.txt.");
    const out = await a1.run("dd", ["if=/dev/zero", "of=huge", "bs=64K", "count=512"]);
    expect(out).toContain(`--- stopped ---\ndd was stopped writing a file past ${MB - 100_000} bytes, what the sandbox could still take.`);
    expect(bytesOn(a1.sandbox)).toBe(MB - 100_000);
    expect(ledger.bytesOf("alice")).toBe(MB);
    expect(await b1.write("f.txt", 500_000)).toBe("Wrote 500000 bytes to f.txt.");
  });

  it("stops a program writing many small files once the folder holds more than the owner's budget", async () => {
    const { ledger, attempt } = instance();
    const [a1, b1] = [attempt("a1"), attempt("b1")];
    const out = await a1.run("python3", ["-c", manyFiles]);
    expect(out).toContain(
      "--- stopped ---\npython3 was stopped while it ran: the sandboxes of this run's owner's runs may hold at most 1048576 bytes of files together, and they held",
    );
    const held = bytesOn(a1.sandbox);
    // Past the budget by what it wrote between two counts of the folder (20 ms apart here, longer
    // on a busy machine), far short of the 128 MiB it would have written.
    expect(held).toBeGreaterThan(MB);
    expect(held).toBeLessThanOrEqual(MB + 32 * MB);
    expect(ledger.bytesOf("alice")).toBe(held);
    expect(await b1.write("f.txt", 500_000)).toBe("Wrote 500000 bytes to f.txt.");
    expect(await b1.run("dd", ["if=/dev/zero", "of=g", "bs=1000", "count=100"])).toMatch(/^exit code: 0\n/);
    expect(bytesOn(b1.sandbox)).toBe(600_000);
  });

  it("stops a program making many empty files once the folder holds more than SANDBOX_MAX_ENTRIES", async () => {
    const { attempt } = instance();
    const a1 = attempt("a1", { maxEntries: 200 });
    const out = await a1.run("python3", ["-c", "for i in range(20000): open(f'e{i}', 'w').close()"]);
    expect(out).toContain("--- stopped ---\npython3 was stopped while it ran: the sandbox may hold at most 200 files and folders, and it held more.");
    const made = readdirSync(a1.sandbox).length;
    expect(made).toBeGreaterThan(200);
    expect(made).toBeLessThan(20_000);
    await expect(a1.write("one-more.txt", 1)).rejects.toThrow("The sandbox may hold at most 200 files and folders");
  });

  it("limits one file through /bin/sh's ulimit where prlimit is missing, in whole 512-byte blocks, passing arguments verbatim", () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "dossier-cmd-disk-"));
    const spawned = limitedSpawn("dd", ["if=/dev/zero", "of=$(x)", "bs=64K", "count=16"], 100_000, { sh: "/bin/sh" });
    const dd = spawnSync(spawned.file, spawned.args, { cwd, env: { PATH: settings.path } });
    expect(dd.signal).toBe("SIGXFSZ");
    expect(statSync(path.join(cwd, "$(x)")).size).toBe(195 * 512);
  });

  it("tells a program missing from a program that exits 127", async () => {
    const { attempt } = instance();
    await expect(attempt("a1").run("no-such-program", [])).rejects.toThrow('There is no program "no-such-program" on this server.');
    expect(await attempt("a1").run("sh", ["-c", "exit 127"])).toMatch(/^exit code: 127\n/);
  });
});
