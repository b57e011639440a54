// R15, through runs: the sandbox folders of one principal's runs hold at most
// SANDBOX_MAX_BYTES_PER_PRINCIPAL together. A paused run's folder counts and is never removed, by
// the sweep or to make room; once its run ended, a write past the budget removes it early.
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { PausedRunDocument, PauseRunDocument, ResumeRunDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { gateTool } from "../support/gate-tool.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, waitUntil } from "../support/wait.js";

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString().split(":")[1]!;
const write = (file: string, bytes: number) => ({ name: "write_file", arguments: { path: file, content: "x".repeat(bytes) } });
const pause = async (client: DossierClient, runId: string) =>
  expectType((await client.request(PauseRunDocument, { input: { runId } })).pauseRun, "PauseRunSuccess");
const resume = async (client: DossierClient, runId: string) =>
  expectType((await client.request(ResumeRunDocument, { input: { runId } })).resumeRun, "ResumeRunSuccess");
const inStatus = (client: DossierClient, runId: string, status: string) =>
  waitUntil(async () => {
    const run = expectType((await client.request(PausedRunDocument, { id: runId })).node!, "Run");
    return run.status === status ? run : undefined;
  }, 20_000);

describe.each(backends)("sandbox budgets of runs on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("refuses a run's write past its principal's budget while a paused run's folder holds it, and the run goes on; removes that folder early once its run ended", async () => {
    const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-budget-runs-"));
    const held = gateTool();
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir,
        sandbox: { budgets: { perPrincipal: 150 }, retentionHours: 0, sweepIntervalMs: 3_600_000 },
        extraTools: [held.tool],
      },
    });
    const first = (await admit(t.client, { question: callToolsInTurns([write("notes.txt", 100)], [{ name: "wait" }]) })).run;
    await waitFor(() => held.state.reached, 20_000);
    await pause(t.client, first.id);
    held.state.open();
    await inStatus(t.client, first.id, "PAUSED");

    const second = (await admit(t.client, { question: callToolsInTurns([write("f.txt", 100)], [write("g.txt", 50)]) })).run;
    const done = await settled(t.client, second.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toBe(
      "Error: The sandboxes of this run's owner's runs may hold at most 150 bytes of files together: they hold 100, and writing f.txt would make it 200. Overwrite files you no longer need with shorter ones.\n---\nWrote 50 bytes to g.txt.",
    );
    // Retention 0: the ended run's folder goes at the sweep, the paused run's stays.
    expect(await t.app.runtime!.sandboxSweeper.sweep()).toBe(1);
    expect(readdirSync(sandboxDir)).toEqual([rawId(first.id)]);

    await resume(t.client, first.id);
    expect((await settled(t.client, first.id)).status).toBe("SUCCEEDED");
    expect(existsSync(path.join(sandboxDir, rawId(first.id), "notes.txt"))).toBe(true);
    // The first run ended: its folder makes room for the third's write, before any sweep.
    const third = (await admit(t.client, { question: callToolsInTurns([write("f.txt", 100)]) })).run;
    expect((await settled(t.client, third.id)).answer).toBe("Wrote 100 bytes to f.txt.");
    expect(readdirSync(sandboxDir)).toEqual([rawId(third.id)]);
  }, 60_000);
});
