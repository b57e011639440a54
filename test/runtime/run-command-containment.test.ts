// R15: nothing a run_command program starts outlives its call, not even a process that left the
// program's session (setsid): in a PID namespace per call where the machine allows one, else by the
// session and the call's marker (command-containment.ts).
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { logCommandContainment } from "../../src/compose/infrastructure.js";
import type { Config } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { containmentOnThisServer } from "../../src/runtime/tools/command-containment.js";
import { type CommandSettings, createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { toolContext } from "../support/tool-context.js";

const base = { timeoutMs: 10_000, path: process.env.PATH ?? "/usr/bin:/bin" };
const onThisMachine = await containmentOnThisServer();
const ways: Array<[string, CommandSettings]> = [["the session and the call's marker", { ...base, containment: "session" }]];
if (onThisMachine.kind === "pid-namespace") ways.unshift(["a PID namespace", base]);

// The shell's pid as the server sees it (/proc is the machine's), then a file written a second
// later: a process that outlived its call would write it.
const escaper = "read pid rest < /proc/self/stat; echo $pid > pid; sleep 1; echo late > escaped; sleep 30";

const stateOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]![0]!;
  } catch {
    return "gone";
  }
};

async function expectContained(sandbox: string) {
  const pid = Number(readFileSync(path.join(sandbox, "pid"), "utf8"));
  try {
    expect(pid).toBeGreaterThan(1);
    // Stopped by the time the call returned: gone, or a zombie its adopter has yet to reap.
    expect(["gone", "Z"]).toContain(stateOf(pid));
    await new Promise((resolve) => setTimeout(resolve, 1_800));
    expect(existsSync(path.join(sandbox, "escaped"))).toBe(false);
  } finally {
    if (!["gone", "Z"].includes(stateOf(pid))) process.kill(pid, "SIGKILL");
  }
}

describe.each(ways)("run_command, contained by %s", (_way, settings) => {
  it("stops a program that left the session (setsid) when the call ends by the program's exit", async () => {
    const sandbox = mkdtempSync(path.join(tmpdir(), "dossier-contain-"));
    const tool = createRunCommandTool(sandbox, settings);
    expect(await tool.execute({ command: "setsid", args: ["sh", "-c", escaper] }, toolContext())).toBe("exit code: 0\n--- stdout ---\n\n--- stderr ---\n");
    await expectContained(sandbox);
  });

  it("stops it when the run is cancelled", async () => {
    const sandbox = mkdtempSync(path.join(tmpdir(), "dossier-contain-"));
    const tool = createRunCommandTool(sandbox, settings);
    const cancel = new AbortController();
    const call = tool.execute({ command: "sh", args: ["-c", `setsid sh -c '${escaper}' & sleep 30`] }, toolContext({ signal: cancel.signal }));
    await vi.waitFor(() => expect(existsSync(path.join(sandbox, "pid"))).toBe(true), { timeout: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    cancel.abort(new Error("cancelled"));
    await expect(call).rejects.toThrow("cancelled");
    await expectContained(sandbox);
  });
});

describe("run_command's containment at start", () => {
  it("is logged once where runs may run programs, and not where they may not", async () => {
    const lines: Array<{ level: string; message: string }> = [];
    const logger = createLogger("info", (line) => lines.push(JSON.parse(line)));
    const config = (allowed: boolean) => ({ capabilities: { commands: { allowed } } }) as Config;
    await logCommandContainment(config(false), logger);
    expect(lines).toEqual([]);
    await logCommandContainment(config(true), logger);
    expect(lines).toHaveLength(1);
    if (onThisMachine.kind === "pid-namespace")
      expect(lines[0]).toMatchObject({ level: "info", message: expect.stringMatching(/^run_command: each call's programs run in a PID namespace/) });
    else expect(lines[0]).toMatchObject({ level: "warn", message: expect.stringContaining("env -i setsid") });
  });
});
