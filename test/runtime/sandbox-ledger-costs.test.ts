// R15, what the sandbox budgets cost: the first write after a start does not wait for every
// folder on DATA_DIR to be counted (only its principal's), and a write past a budget asks the
// database nothing: which folders' runs ended is kept in the ledger, learnt as runs end.
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { silentLogger } from "../../src/logger.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { sandboxSpace } from "../../src/runtime/sandbox-space.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";
import { type FolderRun, SandboxLedger, type SandboxBudgets } from "../../src/runtime/tools/sandbox-ledger.js";
import { SandboxUsage } from "../../src/runtime/tools/sandbox-usage.js";
import { toolContext } from "../support/tool-context.js";

/** Folders listed and files looked at on disk, by anyone in this file. */
const disk = vi.hoisted(() => ({ calls: 0 }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs/promises")>();
  const counted =
    <A extends unknown[], R>(call: (...args: A) => R) =>
    (...args: A): R => {
      disk.calls += 1;
      return call(...args);
    };
  const opendir = counted(actual.opendir);
  const lstat = counted(actual.lstat);
  return { ...actual, opendir, lstat, default: { ...actual, opendir, lstat } };
});

const context = toolContext();
const refusal = (work: Promise<unknown>) =>
  work.then(
    (result) => `written: ${String(result)}`,
    (error: Error) => error.message,
  );

function instance(runs: Record<string, { ownerId: string; endedAt: Date | null }>, budgets: Partial<SandboxBudgets>) {
  const root = mkdtempSync(path.join(tmpdir(), "dossier-ledger-costs-"));
  const asked: string[][] = [];
  const lifetimes = async (ids: readonly string[]): Promise<FolderRun[]> => {
    asked.push([...ids]);
    return ids.flatMap((id) => (runs[id] ? [{ id, ...runs[id] }] : []));
  };
  const ledger = new SandboxLedger({ dir: root, budgets, runs: lifetimes });
  const attempt = (run: string) => {
    const sandbox = path.join(root, run);
    const usage = new SandboxUsage(sandbox, {}, { ledger, runId: run, owner: runs[run]!.ownerId });
    const [write] = createSandboxFileTools(sandbox, usage) as [Tool, Tool];
    return (file: string, bytes: number) => write.execute({ path: file, content: "x".repeat(bytes) }, context);
  };
  const folder = (run: string, bytes: number) => {
    mkdirSync(path.join(root, run), { recursive: true });
    writeFileSync(path.join(root, run, "left.txt"), "y".repeat(bytes));
  };
  return { root, ledger, asked, attempt, folder };
}

describe("sandbox ledger costs", () => {
  it("refuses 100 writes past the principal's budget, and 100 past the total, asking the database once; a run heard ending makes room without asking", async () => {
    const runs: Record<string, { ownerId: string; endedAt: Date | null }> = {
      paused: { ownerId: "alice", endedAt: null },
      bobs: { ownerId: "bob", endedAt: null },
      a1: { ownerId: "alice", endedAt: null },
      c1: { ownerId: "carol", endedAt: null },
    };
    const { root, ledger, asked, attempt, folder } = instance(runs, { perPrincipal: 150, total: 250 });
    folder("paused", 120);
    folder("bobs", 100);
    const [a1, c1] = [attempt("a1"), attempt("c1")];
    const refusals: string[] = [];
    for (let i = 0; i < 100; i += 1) refusals.push(await refusal(a1(`f${i}.txt`, 40)));
    for (let i = 0; i < 100; i += 1) refusals.push(await refusal(c1(`f${i}.txt`, 40)));
    expect(refusals).toEqual([
      ...Array.from(
        { length: 100 },
        (_, i) =>
          `The sandboxes of this run's owner's runs may hold at most 150 bytes of files together: they hold 120, and writing f${i}.txt would make it 160. Overwrite files you no longer need with shorter ones.`,
      ),
      ...Array.from(
        { length: 100 },
        (_, i) =>
          `The sandbox space on this server is full: the 40 bytes writing f${i}.txt would add do not fit. This run's owner's runs hold none of it, so there is nothing of theirs to free: try again later, or ask the server's operator for room.`,
      ),
    ]);
    expect(asked.length).toBeLessThanOrEqual(1);
    // The paused run was cancelled (heard on the event bus): its folder goes to make room, still without asking.
    ledger.ended("paused", new Date());
    expect(await a1("f.txt", 40)).toBe("Wrote 40 bytes to f.txt.");
    expect(readdirSync(root).sort()).toEqual(["a1", "bobs", "c1"]);
    expect(asked.length).toBeLessThanOrEqual(1);
  });

  it("does not make the first write wait for 2,000 folders on disk to be counted, yet holds the principal's budget from that write", async () => {
    const runs: Record<string, { ownerId: string; endedAt: Date | null }> = {
      a1: { ownerId: "alice", endedAt: null },
      a0: { ownerId: "alice", endedAt: null },
    };
    const { ledger, attempt, folder } = instance(runs, { perPrincipal: 150 });
    for (let i = 0; i < 2_000; i += 1) {
      runs[`b${i}`] = { ownerId: "bob", endedAt: null };
      folder(`b${i}`, 10);
    }
    folder("a0", 100);
    const a1 = attempt("a1");
    disk.calls = 0;
    expect(await refusal(a1("f.txt", 60))).toBe(
      "The sandboxes of this run's owner's runs may hold at most 150 bytes of files together: they hold 100, and writing f.txt would make it 160. Overwrite files you no longer need with shorter ones.",
    );
    expect(await a1("f.txt", 50)).toBe("Wrote 50 bytes to f.txt.");
    const beforeWritten = disk.calls;
    await ledger.ready();
    // The whole count lists each folder and looks at its file: 4,000 calls at least, mostly after the writes.
    expect(disk.calls).toBeGreaterThanOrEqual(4_000);
    expect(beforeWritten).toBeLessThan(400);
    expect([ledger.bytesOf("alice"), ledger.bytesOf("bob"), ledger.totalBytes()]).toEqual([150, 20_000, 20_150]);
  });
});

describe("sandbox space", () => {
  it("counts the folders on disk when the worker starts; a run end the worker heard makes room with no query", async () => {
    const { root, space, put, asked } = pausedFolderOfAlice();
    space.watcher.start();
    try {
      await vi.waitFor(() => expect(space.ledger.bytesOf("alice")).toBe(120));
      expect(await put("f.txt")).toMatch(/^The sandboxes of this run's owner's runs may hold at most 150 bytes/);
      // The worker heard it cancelled (on the event bus: a run ended on any instance is heard).
      space.watcher.heard({ runId: "paused", status: "CANCELLED", at: new Date().toISOString() });
      await vi.waitFor(async () => expect(await put("f.txt")).toBe("written: Wrote 40 bytes to f.txt."));
      expect(readdirSync(root)).toEqual(["a1"]);
      expect(asked()).toBe(1);
    } finally {
      await space.watcher.stop();
    }
  });
});

describe("sandbox space, run ends gone unheard", () => {
  it("reads which folders' runs ended once the worker's subscription was made again, then makes room without asking again", async () => {
    const { root, runs, space, put, asked } = pausedFolderOfAlice();
    space.watcher.start();
    await space.ledger.ready();
    expect(await put("f.txt")).toMatch(/^The sandboxes of this run's owner's runs may hold at most 150 bytes/);
    // The run was cancelled while the worker's subscription was down.
    runs.paused = { ownerId: "alice", endedAt: new Date() };
    expect(await put("f.txt")).toMatch(/^The sandboxes of this run's owner's runs may hold at most 150 bytes/);
    space.watcher.unheard();
    await vi.waitFor(async () => expect(await put("f.txt")).toBe("written: Wrote 40 bytes to f.txt."));
    expect(readdirSync(root)).toEqual(["a1"]);
    expect(asked()).toBe(2);
  });
});

/**
 * A DATA_DIR holding a paused run's folder of alice's (120 bytes) under a 150-byte budget per
 * principal, with the database's answers about the runs counted; `put` writes 40 bytes as alice's run a1.
 */
function pausedFolderOfAlice() {
  const root = mkdtempSync(path.join(tmpdir(), "dossier-ledger-space-"));
  const runs: Record<string, { ownerId: string; endedAt: Date | null }> = {
    paused: { ownerId: "alice", endedAt: null },
    a1: { ownerId: "alice", endedAt: null },
  };
  let asked = 0;
  const lifetimes = async (ids: readonly string[]): Promise<FolderRun[]> => {
    asked += 1;
    return ids.flatMap((id) => (runs[id] ? [{ id, ...runs[id] }] : []));
  };
  mkdirSync(path.join(root, "paused"));
  writeFileSync(path.join(root, "paused", "left.txt"), "y".repeat(120));
  const space = sandboxSpace({ dir: root, runs: { lifetimes }, logger: silentLogger }, { budgets: { perPrincipal: 150 } });
  const [write] = createSandboxFileTools(path.join(root, "a1"), space.usageOf({ id: "a1", ownerId: "alice" })) as [Tool, Tool];
  const put = (file: string) => refusal(write.execute({ path: file, content: "x".repeat(40) }, context));
  return { root, runs, space, put, asked: () => asked };
}
