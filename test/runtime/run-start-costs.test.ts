// What a run costs its worker before it does anything: its sandbox folder is made only when a
// file tool is used, and the tool schemas every run offers are counted for the context budget
// once, not once per run.
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decodeGlobalId } from "../../src/graphql/global-id.js";
import type { Tokenizer } from "../../src/runtime/ports/tokenizer.js";
import { admit } from "../support/fixtures.js";
import { callTools, callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("a run's start", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("leaves no sandbox folder when the run uses no file tool, and makes it for one that writes and reads", async () => {
    const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-sandbox-"));
    t = await startTestApp("pglite", { runtime: { model: toolCallingModel(), sandboxDir } });
    const quiet = await Promise.all([0, 1, 2].map(() => admit(t!.client, { question: callTools({ name: "task_list", arguments: { action: "list" } }) })));
    for (const { run } of quiet) expect((await settled(t.client, run.id)).answer).toBe("The task list is empty.");
    expect(readdirSync(sandboxDir)).toEqual([]);

    const { run } = await admit(t.client, {
      question: callToolsInTurns(
        [{ name: "read_file", arguments: { path: "notes.md" } }],
        [{ name: "write_file", arguments: { path: "notes/today.md", content: "Résumé" } }],
        [{ name: "read_file", arguments: { path: "notes/today.md" } }],
      ),
    });
    expect((await settled(t.client, run.id)).answer).toBe(
      ["Error: There is no file notes.md in the sandbox.", "Wrote 8 bytes to notes/today.md.", "Résumé"].join("\n---\n"),
    );
    expect(readdirSync(sandboxDir)).toEqual([decodeGlobalId(run.id)!.id]);
    expect(existsSync(path.join(sandboxDir, decodeGlobalId(run.id)!.id, "notes/today.md"))).toBe(true);
  });

  const commands = { timeoutMs: 2_000, path: process.env.PATH ?? "/usr/bin:/bin" };
  const fetch = { allowedHosts: ["example.com"], maxBytes: 10_000, timeoutMs: 1_000 };
  it.each([
    ["the built-in tools", {}, ["task_list", "write_file", "read_file", "load_skill"]],
    ["run_command and http_fetch too", { commands, fetch }, ["run_command", "http_fetch"]],
  ])("counts the tool schemas the runs offer once for all of them: %s", async (_, capabilities, offered) => {
    const counted: string[] = [];
    const tokenizer: Tokenizer = { name: "counting", count: (text) => (counted.push(text), Math.ceil(text.length / 4)) };
    const model = toolCallingModel();
    const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-sandbox-"));
    t = await startTestApp("pglite", { runtime: { model, sandboxDir, tokenizer, ...capabilities } });
    const runs = await Promise.all([0, 1, 2, 3].map(() => admit(t!.client, { question: callTools({ name: "task_list", arguments: { action: "list" } }) })));
    for (const { run } of runs) await settled(t.client, run.id);
    // Eight requests (two per run), all with the same tools: their JSON is counted once.
    expect(model.requests).toHaveLength(8);
    const schemasJson = JSON.stringify(model.requests[0]!.tools);
    expect(model.requests.every((request) => JSON.stringify(request.tools) === schemasJson)).toBe(true);
    expect(model.requests[0]!.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(offered));
    expect(counted.filter((text) => text === schemasJson)).toHaveLength(1);
  });
});
