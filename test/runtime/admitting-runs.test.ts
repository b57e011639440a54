// A run cannot shed its agent profile's rules by admitting another run: Dossier's own MCP server's
// admit_run, attached to a run, admits under the key's default profile. A run whose profile holds
// calls for a person has its admit_run calls held too; a run under the default profile admits at once.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

describe("admitting a run from inside a run", () => {
  let t: TestApp | undefined;
  const admitted: string[] = [];
  // As Dossier's MCP server's admit_run is offered to a run that has that server attached.
  const admitRun: Tool = {
    schema: { name: "mcp__dossier__admit_run", description: "[MCP server dossier] Asks Dossier's research agent a question", parameters: { type: "object" } },
    fullName: "mcp__dossier__admit_run",
    execute: async (args) => {
      admitted.push(JSON.stringify(args));
      return '{"run":{"status":"QUEUED"}}';
    },
  };
  beforeAll(async () => {
    t = await startTestApp("pglite", {
      agents: [{ name: "careful", systemPrompt: "Ask before reading notes.", toolApprovals: { read_notes: "always" } }],
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-admitting-")),
        extraTools: [admitRun],
        leaseMs: 10_000,
        sweepMs: 200,
      },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("holds admit_run for a person when the run's profile holds calls; a default run admits at once", async () => {
    const client = t!.as(await t!.createPrincipal("owner"));
    const question = callTools({ name: "mcp__dossier__admit_run", arguments: { question: "read the notes" } });
    const { run } = await admit(client, { agent: "careful", question });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    }, 20_000);
    expect(held.status).toBe("WAITING");
    expect(held.pendingApprovals.edges.map((edge) => edge.node.toolName)).toEqual(["mcp__dossier__admit_run"]);
    expect(admitted).toEqual([]);

    const { run: plain } = await admit(client, { question });
    expect((await settled(client, plain.id)).status).toBe("SUCCEEDED");
    expect(admitted).toEqual(['{"question":"read the notes"}']);
  });
});
