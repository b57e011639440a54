// R15: run_command is off by default; when enabled it runs a program in the run's sandbox folder,
// without a shell, with a timeout, and without the server's environment.
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { decodeGlobalId } from "../../src/graphql/global-id.js";
import { createRunCommandTool } from "../../src/runtime/tools/run-command.js";
import { admit } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { toolContext } from "../support/tool-context.js";

const settings = { timeoutMs: 2_000, path: process.env.PATH ?? "/usr/bin:/bin" };

describe("run_command", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("is not offered by default, nor is http_fetch without allowed hosts; both are offered once configured", async () => {
    const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-sandbox-"));
    const model = toolCallingModel();
    t = await startTestApp("pglite", { runtime: { model, sandboxDir } });
    const { run } = await admit(t.client, { question: callTools({ name: "run_command", arguments: { command: "pwd" } }) });
    expect((await settled(t.client, run.id)).answer).toBe('Error: there is no tool named "run_command".');
    const offered = model.requests[0]!.tools.map((tool) => tool.name);
    expect(offered).not.toContain("run_command");
    expect(offered).not.toContain("http_fetch");
    await t.close();

    const enabled = toolCallingModel();
    t = await startTestApp("pglite", {
      runtime: {
        model: enabled,
        sandboxDir,
        commands: settings,
        fetch: { allowedHosts: ["example.com"], maxBytes: 10_000, timeoutMs: 1_000 },
      },
    });
    const { run: second } = await admit(t.client, { question: callTools({ name: "run_command", arguments: { command: "pwd" } }) });
    const done = await settled(t.client, second.id);
    expect(done.answer).toBe(`exit code: 0\n--- stdout ---\n${realpathSync(path.join(sandboxDir, decodeGlobalId(second.id)!.id))}\n\n--- stderr ---\n`);
    expect(enabled.requests[0]!.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["run_command", "http_fetch"]));
  });

  it("passes arguments verbatim: no shell expands, chains or globs them", async () => {
    const sandbox = mkdtempSync(path.join(tmpdir(), "dossier-cmd-"));
    const tool = createRunCommandTool(sandbox, settings);
    const out = await tool.execute({ command: "echo", args: ["$(touch pwned)", "; touch pwned2", "*", "`id`", "a b"] }, toolContext());
    expect(out).toBe("exit code: 0\n--- stdout ---\n$(touch pwned) ; touch pwned2 * `id` a b\n\n--- stderr ---\n");
    expect(existsSync(path.join(sandbox, "pwned"))).toBe(false);
    expect(existsSync(path.join(sandbox, "pwned2"))).toBe(false);
    await expect(tool.execute({ command: "echo hi" }, toolContext())).rejects.toThrow('There is no program "echo hi"');
  });

  it("runs in the sandbox folder with only PATH, HOME and LANG, and reports exit codes and stderr", async () => {
    const sandbox = mkdtempSync(path.join(tmpdir(), "dossier-cmd-"));
    const tool = createRunCommandTool(sandbox, settings);
    await tool.execute({ command: "touch", args: ["made-here.txt"] }, toolContext());
    expect(existsSync(path.join(sandbox, "made-here.txt"))).toBe(true);
    const env = await tool.execute({ command: "env" }, toolContext());
    const names = env
      .split("--- stdout ---\n")[1]!
      .split("\n--- stderr ---")[0]!
      .trim()
      .split("\n")
      .map((line) => line.split("=")[0])
      .sort();
    expect(names).toEqual(["HOME", "LANG", "PATH"]);
    expect(await tool.execute({ command: "ls", args: ["no-such-file"] }, toolContext())).toMatch(/^exit code: 2\n[\s\S]*--- stderr ---\n.*no-such-file/);
  });

  it("stops a program at the timeout", async () => {
    const tool = createRunCommandTool(mkdtempSync(path.join(tmpdir(), "dossier-cmd-")), { ...settings, timeoutMs: 300 });
    const started = Date.now();
    await expect(tool.execute({ command: "sleep", args: ["5"] }, toolContext())).rejects.toThrow("sleep timed out after 300 ms and was stopped.");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("leaves nothing running: what a program starts in the background stops when the call ends", async () => {
    const tool = createRunCommandTool(mkdtempSync(path.join(tmpdir(), "dossier-cmd-")), { ...settings, timeoutMs: 10_000 });
    const started = Date.now();
    const out = await tool.execute({ command: "sh", args: ["-c", "sleep 30 & echo $!"] }, toolContext());
    expect(Date.now() - started).toBeLessThan(3_000);
    const pid = Number(out.split("--- stdout ---\n")[1]!.split("\n")[0]);
    expect(pid).toBeGreaterThan(0);
    // Running, not merely listed: a stopped orphan stays a zombie until whoever adopted it (the
    // machine's first process) reaps it, which no program of Dossier's controls.
    const alive = () => {
      try {
        return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]![0] !== "Z";
      } catch {
        return false;
      }
    };
    await vi.waitFor(() => expect(alive()).toBe(false), { timeout: 2_000 });
  });
});
