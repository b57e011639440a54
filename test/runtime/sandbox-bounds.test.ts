// R15: what one run's sandbox folder may hold and what a write may name is bounded; past a bound
// the model gets an error result and the run goes on. A finished run's folder is removed
// SANDBOX_RETENTION_HOURS after it ended; a running run's is kept.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";
import { type SandboxLimits, SandboxUsage } from "../../src/runtime/tools/sandbox-usage.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { toolContext } from "../support/tool-context.js";
import { waitFor } from "../support/wait.js";
import { gateTool } from "../support/gate-tool.js";

const context = toolContext();
const folders = (dir: string) => execFileSync("find", [dir, "-mindepth", "1", "-type", "d"]).toString().split("\n").filter(Boolean).length;
const entries = (dir: string) => execFileSync("find", [dir, "-mindepth", "1"]).toString().split("\n").filter(Boolean).length;
const refusal = (work: Promise<unknown>) =>
  work.then(
    (result) => `written: ${String(result)}`,
    (error: Error) => error.message,
  );

/** The file tools of one attempt of a run: its folder `<root>/<run>`, counted afresh. */
function attempt(root: string, run: string, limits?: Partial<SandboxLimits>) {
  const sandbox = path.join(root, run);
  const usage = new SandboxUsage(sandbox, limits);
  const [write] = createSandboxFileTools(sandbox, usage) as [Tool, Tool];
  return { sandbox, usage, write: (file: string, content = "") => write.execute({ path: file, content }, context) };
}

describe("sandbox bounds", () => {
  it("refuses a path longer or deeper than a write may name without making a folder; one at the bounds is written", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "dossier-bounds-"));
    const { sandbox, write } = attempt(root, "run-1");
    // One call with 4 KB of arguments once made 2,000 folders.
    const deep = `${Array.from({ length: 2_000 }, () => "a").join("/")}/f`;
    expect(await refusal(write(deep))).toBe("path is 4001 characters long; a path may have at most 1024.");
    const seventeen = `${Array.from({ length: 16 }, () => "a").join("/")}/f`;
    expect(await refusal(write(seventeen))).toBe("path has 17 parts; a path may have at most 16 (its folders and the file's name).");
    expect(existsSync(sandbox)).toBe(false);
    const sixteen = `${Array.from({ length: 15 }, () => "a").join("/")}/f`;
    expect(await write(sixteen)).toBe(`Wrote 0 bytes to ${sixteen}.`);
    expect(folders(sandbox)).toBe(15);
  });

  it("refuses writes past a run's files-and-folders and bytes bounds, in this attempt and the next, while another run's writes go on", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "dossier-bounds-"));
    const limits = { maxEntries: 4, maxBytes: 100 };
    const first = attempt(root, "run-1", limits);
    expect(await first.write("notes/a.txt", "x".repeat(60))).toBe("Wrote 60 bytes to notes/a.txt.");
    expect(await first.write("notes/b.txt", "y".repeat(30))).toBe("Wrote 30 bytes to notes/b.txt.");
    expect(await refusal(first.write("notes/c.txt", "z".repeat(20)))).toBe(
      "The sandbox may hold at most 100 bytes of files: it holds 90, and writing notes/c.txt would make it 110. Overwrite files you no longer need with shorter ones.",
    );
    // Overwriting a file counts its new bytes instead of its old ones, and adds no entry.
    expect(await first.write("notes/a.txt", "x".repeat(10))).toBe("Wrote 10 bytes to notes/a.txt.");
    expect(await first.write("c.txt", "z".repeat(20))).toBe("Wrote 20 bytes to c.txt.");
    expect(await refusal(first.write("d.txt"))).toBe(
      "The sandbox may hold at most 4 files and folders: it holds 4, and writing d.txt would add 1. Write into existing folders, or overwrite files you no longer need.",
    );
    expect(entries(first.sandbox)).toBe(4);
    // A new attempt of the same run (another worker, after a restart) counts what is on disk.
    const next = attempt(root, "run-1", limits);
    expect(await refusal(next.write("more/e.txt"))).toMatch(
      /^The sandbox may hold at most 4 files and folders: it holds 4, and writing more\/e.txt would add 2\./,
    );
    expect(await refusal(next.write("c.txt", "z".repeat(61)))).toMatch(/^The sandbox may hold at most 100 bytes of files: it holds 60/);
    expect(await next.write("c.txt", "z".repeat(50))).toBe("Wrote 50 bytes to c.txt.");
    // Another run's folder has bounds of its own.
    const other = attempt(root, "run-2", limits);
    expect(await other.write("notes/a.txt", "x".repeat(60))).toBe("Wrote 60 bytes to notes/a.txt.");
    expect(readdirSync(root).sort()).toEqual(["run-1", "run-2"]);
    expect(entries(first.sandbox)).toBe(4);
  });

  it("counts writes made at the same time exactly: of eight with room for five, five are written", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "dossier-bounds-"));
    const { sandbox, write } = attempt(root, "run-1", { maxEntries: 5 });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => refusal(write(`f${i}.txt`, "x"))));
    expect(results.filter((result) => result.startsWith("written")).length).toBe(5);
    expect(entries(sandbox)).toBe(5);
  });

  it("counts again what a program run_command ran made before the next write", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "dossier-bounds-"));
    const { sandbox, usage, write } = attempt(root, "run-1", { maxEntries: 4 });
    expect(await write("a.txt", "a")).toBe("Wrote 1 bytes to a.txt.");
    const runCommand = createRunCommandTool(sandbox, { timeoutMs: 5_000, path: process.env.PATH ?? "/usr/bin:/bin" }, usage);
    await runCommand.execute({ command: "mkdir", args: ["-p", "x/y/z"] }, context);
    expect(await refusal(write("b.txt"))).toMatch(/^The sandbox may hold at most 4 files and folders: it holds 4, and writing b.txt would add 1\./);
    expect(await write("a.txt", "overwritten")).toBe("Wrote 11 bytes to a.txt.");
  });
});

describe.each(backends)("sandbox folders of runs on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString().split(":")[1]!;

  it("answers a write past a bound with an error the run goes on after; removes a finished run's folder after retention, never a running or recent one's", async () => {
    const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-sandboxes-"));
    const held = gateTool();
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir,
        sandbox: { limits: { maxPathDepth: 4 }, retentionHours: 24, sweepIntervalMs: 3_600_000 },
        extraTools: [held.tool],
        leaseMs: 5_000,
      },
    });
    const deep = { name: "write_file", arguments: { path: "a/b/c/d/e.txt", content: "deep" } };
    const shallow = { name: "write_file", arguments: { path: "a/b/c/d.txt", content: "kept" } };
    const old = (await admit(t.client, { question: callToolsInTurns([deep], [shallow]) })).run;
    const done = await settled(t.client, old.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toBe("Error: path has 5 parts; a path may have at most 4 (its folders and the file's name).\n---\nWrote 4 bytes to a/b/c/d.txt.");
    const recent = (await admit(t.client, { question: callToolsInTurns([shallow]) })).run;
    expect((await settled(t.client, recent.id)).status).toBe("SUCCEEDED");
    const running = (await admit(t.client, { question: callToolsInTurns([shallow], [{ name: "wait" }]) })).run;
    await waitFor(() => held.state.reached, 20_000);
    expect(readdirSync(sandboxDir).sort()).toEqual([rawId(old.id), rawId(recent.id), rawId(running.id)].sort());

    // The first run ended 25 hours ago; the running one was admitted then.
    const dayAgo = new Date(Date.now() - 25 * 3_600_000);
    await t.app.db.prisma.run.update({ where: { id: rawId(old.id) }, data: { finishedAt: dayAgo } });
    await t.app.db.prisma.run.update({ where: { id: rawId(running.id) }, data: { createdAt: dayAgo, startedAt: dayAgo } });
    expect(await t.app.runtime!.sandboxSweeper.sweep()).toBe(1);
    expect(readdirSync(sandboxDir).sort()).toEqual([rawId(recent.id), rawId(running.id)].sort());
    expect(await t.app.runtime!.sandboxSweeper.sweep()).toBe(0);

    held.state.open();
    expect((await settled(t.client, running.id)).status).toBe("SUCCEEDED");
    expect(existsSync(path.join(sandboxDir, rawId(running.id), "a/b/c/d.txt"))).toBe(true);
  }, 60_000);
});
