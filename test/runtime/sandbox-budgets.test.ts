// R15: what the sandbox folders of one principal's runs hold together, and of every run on the
// instance's DATA_DIR, is bounded (SANDBOX_MAX_BYTES_PER_PRINCIPAL, SANDBOX_MAX_BYTES_TOTAL): a
// write past a budget first removes ended runs' folders, oldest first, then is refused with an
// error the model reads. A paused run's folder counts and is never removed.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logger.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { sweepSandboxes } from "../../src/runtime/sandbox-sweep.js";
import { createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";
import { type FolderRun, type SandboxBudgets, SandboxLedger } from "../../src/runtime/tools/sandbox-ledger.js";
import { SandboxUsage } from "../../src/runtime/tools/sandbox-usage.js";
import { toolContext } from "../support/tool-context.js";

const context = toolContext();
const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);
const refusal = (work: Promise<unknown>) =>
  work.then(
    (result) => `written: ${String(result)}`,
    (error: Error) => error.message,
  );
/** Bytes of the files below `dir`, as the disk holds them. */
const bytesOn = (dir: string) =>
  execFileSync("find", [dir, "-type", "f", "-printf", "%s\n"])
    .toString()
    .split("\n")
    .filter(Boolean)
    .reduce((sum, size) => sum + Number(size), 0);

/** Sandboxes under one root and a ledger over them; `runs` is what the database knows of each folder's run. */
function instance(runs: Record<string, { ownerId: string; endedAt: Date | null }>, budgets: Partial<SandboxBudgets>) {
  const root = mkdtempSync(path.join(tmpdir(), "dossier-budgets-"));
  const asked: string[][] = [];
  const lifetimes = async (ids: readonly string[]): Promise<FolderRun[]> => {
    asked.push([...ids]);
    return ids.flatMap((id) => (runs[id] ? [{ id, ...runs[id] }] : []));
  };
  const ledger = new SandboxLedger({ dir: root, budgets, runs: lifetimes });
  /** One attempt of a run: its file tools over the shared ledger. */
  const attempt = (run: string, maxBytes?: number) => {
    const sandbox = path.join(root, run);
    const usage = new SandboxUsage(sandbox, maxBytes ? { maxBytes } : {}, { ledger, runId: run, owner: runs[run]!.ownerId });
    const [write] = createSandboxFileTools(sandbox, usage) as [Tool, Tool];
    return { sandbox, usage, write: (file: string, bytes: number) => write.execute({ path: file, content: "x".repeat(bytes) }, context) };
  };
  /** A folder already on disk (made before this process counted). */
  const folder = (run: string, bytes: number) => {
    mkdirSync(path.join(root, run), { recursive: true });
    writeFileSync(path.join(root, run, "left.txt"), "y".repeat(bytes));
  };
  const sweep = (retentionHours = 24) => sweepSandboxes({ dir: root, retentionMs: retentionHours * 3_600_000, runs: lifetimes, ledger, logger: silentLogger });
  return { root, ledger, asked, attempt, folder, sweep, runs };
}

const principalRefusal = (held: number, shown: string, after: number, max = 150) =>
  `The sandboxes of this run's owner's runs may hold at most ${max} bytes of files together: they hold ${held}, and writing ${shown} would make it ${after}. Overwrite files you no longer need with shorter ones.`;

describe("sandbox budgets", () => {
  it("refuses a write that would take one principal's folders past its budget together, while another principal's runs write on", async () => {
    const runs = { a1: { ownerId: "alice", endedAt: null }, a2: { ownerId: "alice", endedAt: null }, b1: { ownerId: "bob", endedAt: null } };
    const { root, attempt } = instance(runs, { perPrincipal: 150 });
    const [a1, a2, b1] = [attempt("a1", 100), attempt("a2", 100), attempt("b1", 100)];
    expect(await a1.write("f.txt", 100)).toBe("Wrote 100 bytes to f.txt.");
    expect(await a2.write("f.txt", 40)).toBe("Wrote 40 bytes to f.txt.");
    // Within a2's own bound (100), past alice's (150).
    expect(await refusal(a2.write("g.txt", 20))).toBe(principalRefusal(140, "g.txt", 160));
    expect(await b1.write("f.txt", 100)).toBe("Wrote 100 bytes to f.txt.");
    // An overwrite with fewer bytes makes room for alice's other run.
    expect(await a1.write("f.txt", 10)).toBe("Wrote 10 bytes to f.txt.");
    expect(await a2.write("g.txt", 20)).toBe("Wrote 20 bytes to g.txt.");
    expect([bytesOn(path.join(root, "a1")) + bytesOn(path.join(root, "a2")), bytesOn(path.join(root, "b1"))]).toEqual([70, 100]);
  });

  it("lets two runs of one principal writing at once take the last bytes exactly once: of 2 × 10 writes of 10 bytes with room for 100, ten are written", async () => {
    const runs = { a1: { ownerId: "alice", endedAt: null }, a2: { ownerId: "alice", endedAt: null } };
    const { root, ledger, attempt } = instance(runs, { perPrincipal: 100 });
    const [a1, a2] = [attempt("a1"), attempt("a2")];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => [a1.write(`f${i}.txt`, 10), a2.write(`f${i}.txt`, 10)])
        .flat()
        .map(refusal),
    );
    expect(results.filter((result) => result.startsWith("written")).length).toBe(10);
    expect(results.filter((result) => result.startsWith("The sandboxes of this run's owner's runs")).length).toBe(10);
    expect(bytesOn(root)).toBe(100);
    expect(ledger.bytesOf("alice")).toBe(100);
  });

  it("counts the folders already on disk; past the budget removes the principal's own ended runs' folders, oldest first, never a paused run's", async () => {
    const runs = {
      paused: { ownerId: "alice", endedAt: null },
      older: { ownerId: "alice", endedAt: hoursAgo(2) },
      newer: { ownerId: "alice", endedAt: hoursAgo(1) },
      bobs: { ownerId: "bob", endedAt: hoursAgo(3) },
      a1: { ownerId: "alice", endedAt: null },
    };
    const { root, ledger, asked, attempt, folder } = instance(runs, { perPrincipal: 150 });
    folder("paused", 60);
    folder("older", 30);
    folder("newer", 30);
    folder("bobs", 50);
    const a1 = attempt("a1");
    // 60 + 30 + 30 + 40 = 160: the oldest of alice's ended runs' folders goes.
    expect(await a1.write("f.txt", 40)).toBe("Wrote 40 bytes to f.txt.");
    expect(readdirSync(root).sort()).toEqual(["a1", "bobs", "newer", "paused"]);
    expect(await a1.write("g.txt", 50)).toBe("Wrote 50 bytes to g.txt.");
    expect(readdirSync(root).sort()).toEqual(["a1", "bobs", "paused"]);
    // Only the paused run's folder is left beside a1's: it is never removed.
    expect(await refusal(a1.write("h.txt", 1))).toBe(principalRefusal(150, "h.txt", 151));
    expect(readdirSync(root).sort()).toEqual(["a1", "bobs", "paused"]);
    await ledger.ready();
    expect([ledger.bytesOf("alice"), ledger.bytesOf("bob"), ledger.totalBytes()]).toEqual([150, 50, 200]);
    // The folders' runs were asked for once, when listing them: which ended is kept with each folder.
    expect(asked.map((ids) => [...ids].sort())).toEqual([["bobs", "newer", "older", "paused"]]);
  });

  it("bounds every folder together: past the total, removes anyone's ended runs' folders, oldest first, then refuses", async () => {
    const runs = {
      a1: { ownerId: "alice", endedAt: null },
      bobs: { ownerId: "bob", endedAt: hoursAgo(3) },
      c1: { ownerId: "carol", endedAt: null },
    };
    const { root, ledger, attempt, folder } = instance(runs, { perPrincipal: 150, total: 200 });
    folder("bobs", 50);
    // The instance's worker started: every folder was counted.
    await ledger.ready();
    expect(await attempt("a1").write("f.txt", 120)).toBe("Wrote 120 bytes to f.txt.");
    const c1 = attempt("c1");
    expect(await c1.write("f.txt", 40)).toBe("Wrote 40 bytes to f.txt.");
    expect(readdirSync(root).sort()).toEqual(["a1", "c1"]);
    expect(await refusal(c1.write("g.txt", 41))).toBe(
      "The sandbox space on this server is full: the 41 bytes writing g.txt would add do not fit. This run's owner's runs hold 40 bytes of it: overwrite files you no longer need with shorter ones, or try again later.",
    );
    expect(await c1.write("g.txt", 40)).toBe("Wrote 40 bytes to g.txt.");
    expect([bytesOn(root), ledger.totalBytes()]).toEqual([200, 200]);
  });

  it("counts what a program run_command ran left once it exited, against the principal's other runs' writes", async () => {
    const runs = { a1: { ownerId: "alice", endedAt: null }, a2: { ownerId: "alice", endedAt: null } };
    const { ledger, attempt } = instance(runs, { perPrincipal: 150 });
    const [a1, a2] = [attempt("a1"), attempt("a2")];
    expect(await a2.write("f.txt", 10)).toBe("Wrote 10 bytes to f.txt.");
    const runCommand = createRunCommandTool(a1.sandbox, { timeoutMs: 5_000, path: process.env.PATH ?? "/usr/bin:/bin" }, a1.usage);
    await runCommand.execute({ command: "dd", args: ["if=/dev/zero", "of=big", "bs=120", "count=1"] }, context);
    expect(ledger.bytesOf("alice")).toBe(130);
    expect(await refusal(a2.write("g.txt", 30))).toBe(principalRefusal(130, "g.txt", 160));
  });

  it("learns from the sweep which folders another instance removed or made", async () => {
    const runs = { a1: { ownerId: "alice", endedAt: null }, elsewhere: { ownerId: "alice", endedAt: null }, later: { ownerId: "alice", endedAt: null } };
    const { root, ledger, attempt, folder, sweep } = instance(runs, { perPrincipal: 150 });
    folder("elsewhere", 100);
    const a1 = attempt("a1");
    expect(await refusal(a1.write("f.txt", 60))).toBe(principalRefusal(100, "f.txt", 160));
    // Its run ended on another instance, which removed it; and another run's folder appeared.
    rmSync(path.join(root, "elsewhere"), { recursive: true });
    folder("later", 70);
    expect(await sweep()).toBe(0);
    expect(ledger.bytesOf("alice")).toBe(70);
    expect(await a1.write("f.txt", 60)).toBe("Wrote 60 bytes to f.txt.");
    expect(await refusal(a1.write("g.txt", 30))).toBe(principalRefusal(130, "g.txt", 160));
  });

  it("leaves a paused run's folder to the sweep, however long ago it paused; counts it until its run ends and the sweep removes it", async () => {
    const runs: Record<string, { ownerId: string; endedAt: Date | null }> = {
      paused: { ownerId: "alice", endedAt: null },
      a1: { ownerId: "alice", endedAt: null },
    };
    const { root, ledger, attempt, folder, sweep } = instance(runs, { perPrincipal: 150 });
    folder("paused", 120);
    const a1 = attempt("a1");
    expect(await refusal(a1.write("f.txt", 40))).toBe(principalRefusal(120, "f.txt", 160));
    expect(await sweep(0)).toBe(0);
    expect(existsSync(path.join(root, "paused", "left.txt"))).toBe(true);
    runs.paused = { ownerId: "alice", endedAt: hoursAgo(0) };
    expect(await sweep(0)).toBe(1);
    expect(ledger.bytesOf("alice")).toBe(0);
    expect(await a1.write("f.txt", 40)).toBe("Wrote 40 bytes to f.txt.");
  });
});
