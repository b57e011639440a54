// A command runs as the server's own user: it can read the server's environment (/proc) and every
// run's sandbox. With COMMANDS_ALLOWED, every run_command call therefore waits for a person by
// default; only an operator's TOOL_APPROVALS that names run_command itself lets it run unasked.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { loadConfig } from "../../src/config.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

describe("run_command's approval", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** An app configured as the server is from these settings, and a run that calls run_command once. */
  async function runCommand(env: Record<string, string>) {
    const config = loadConfig({ COMMANDS_ALLOWED: "true", ...env });
    t = await startTestApp("pglite", {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-command-approval-")),
        commands: { timeoutMs: 5_000, path: config.capabilities.commands.path },
        approvals: config.toolApprovals,
      },
    });
    const { run } = await admit(t.client, { question: callTools({ name: "run_command", arguments: { command: "echo", args: ["ran"] } }) });
    return run.id;
  }

  /** The run once it waits or has ended: its status and the tools its pending approvals name. */
  const outcome = (runId: string) =>
    waitUntil(async () => {
      const run = expectType((await t!.client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
      if (run.status === "QUEUED" || run.status === "RUNNING") return undefined;
      return { status: run.status, held: run.pendingApprovals.edges.map((edge) => edge.node.toolName) };
    }, 20_000);

  it("holds every run_command call for a person when TOOL_APPROVALS is unset", async () => {
    const run = await runCommand({});
    expect(await outcome(run)).toEqual({ status: "WAITING", held: ["run_command"] });
  });

  it("holds it under a pattern that releases everything, which does not name run_command", async () => {
    const run = await runCommand({ TOOL_APPROVALS: '{"*":"never","write_*":"always"}' });
    expect(await outcome(run)).toEqual({ status: "WAITING", held: ["run_command"] });
  });

  it("runs it unasked when the operator names run_command: never", async () => {
    const run = await runCommand({ TOOL_APPROVALS: '{"run_command":"never"}' });
    const done = await settled(t!.client, run);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toContain("--- stdout ---\nran\n");
  });
});
