// examples/watch-run.ts as an integrator runs it: a separate process, configured by
// DOSSIER_URL and DOSSIER_API_KEY, against a running server answering with the demo model.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WorkspacesDocument } from "../../sdk/generated/graphql.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("examples/watch-run.ts", () => {
  let t: TestApp | undefined;
  const processes: Spawned[] = [];
  afterEach(async () => {
    await killAll(processes);
    await t?.close();
    t = undefined;
  });

  it("creates a workspace, admits a run and prints its trace live until the answer", async () => {
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-example-")) },
    });
    const apiKey = await t.createPrincipal("integrator");
    const example = spawnTs("examples/watch-run.ts", {
      env: { DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: apiKey },
      args: ["Who makes cells in Europe?"],
    });
    processes.push(example);
    const { code } = await example.exited;
    const output = example.output();
    expect(code, output).toBe(0);

    const lines = output.split("\n");
    expect(lines[0]).toMatch(/^workspace \S+ "Watched from the SDK" \(goal v1\)$/);
    expect(lines[1]).toMatch(/^run \S+ admitted \(QUEUED\)$/);
    // The span tree, in order, indented by depth: the run, its attempt, its turns, the model and tool calls.
    expect(output).toMatch(/#\d+ ▶ RUN /);
    expect(output).toMatch(/#\d+ {3}▶ ATTEMPT attempt 1/);
    expect(output).toMatch(/#\d+ {5}▶ TURN turn 1/);
    expect(output).toMatch(/#\d+ {7}▶ MODEL_CALL /);
    expect(output).toMatch(/#\d+ {7}▶ TOOL_CALL .*task_list/);
    expect(output).toMatch(/#\d+ {9}TOOL_INPUT: .*Answer the question/);
    expect(output).toMatch(/■ MODEL_CALL .* OK in \d+ ms · tokens in \d+ out \d+/);
    expect(output).toMatch(/#\d+ ■ RUN .* OK in \d+ ms/);
    const seqs = [...output.matchAll(/^\s*#(\d+) /gm)].map((m) => Number(m[1]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(output).toContain("trace ended");
    expect(output).toContain("run SUCCEEDED");
    // The demo answers the question asked, not the workspace context that came with it.
    const answer = output.slice(output.indexOf("answer:\n"));
    expect(answer).toMatch(/\[Dossier offline demo\] This is a scripted offline demo reply/);
    expect(answer).toContain('You asked: "Who makes cells in Europe?"');
    expect(answer).not.toContain("workspace-context");

    // It acted as the key's principal: the workspace is theirs, and nobody else's.
    const mine = await t.as(apiKey).request(WorkspacesDocument, { first: 5 });
    expect(mine.workspaces.edges.map((e) => e.node.title)).toEqual(["Watched from the SDK"]);
    const other = await t.as(await t.createPrincipal("someone else")).request(WorkspacesDocument, { first: 5 });
    expect(other.workspaces.edges).toEqual([]);
  });

  it("fails clearly with a refused key", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true });
    const example = spawnTs("examples/watch-run.ts", { env: { DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: "dsk_wrong" } });
    processes.push(example);
    const { code } = await example.exited;
    expect(code).toBe(1);
    expect(example.output()).toMatch(/key|unauthori[sz]ed/i);
  });
});
