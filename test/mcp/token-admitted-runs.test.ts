// A run an access token admitted reads no more than the token could, through MCP as well: with
// Dossier's own MCP server attached under the team's API key, such a run is offered none of its
// tools — its model's call of `read_material` on a publication outside the token's workspaces
// reads nothing, and `decide_tool_call` is never offered to it. A run the API key admitted keeps them.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateAccessTokenDocument, LinkToWorkspaceDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { NODE_FLAGS } from "../../scripts/build.mjs";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MCP_MAIN = path.join(projectRoot, "dist/src/mcp/main.js");
const SECRET = "Workspace B's private findings: B-PRIVATE-CONTENT";

/** toolCallingModel that records the tool names each request offers. */
function recordingModel() {
  const scripted = toolCallingModel("mcp");
  const offered: string[][] = [];
  const model: ModelPort = {
    label: scripted.label,
    model: scripted.model,
    scripted: true,
    contextWindow: scripted.contextWindow,
    complete(request, onEvent) {
      offered.push(request.tools.map((tool) => tool.name));
      return scripted.complete(request, onEvent);
    },
  };
  return { model, offered };
}

describe("Dossier's own MCP server in runs an access token admitted", () => {
  let t: TestApp;
  const recorder = recordingModel();
  const ids = { workspaceA: "", secret: "", key: "", token: "" };

  beforeAll(async () => {
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      mcp: { stdioCommands: [`${process.execPath} ${NODE_FLAGS.join(" ")} ${MCP_MAIN}`], stdioEnv: ["DOSSIER_URL", "DOSSIER_API_KEY"] },
      runtime: { model: recorder.model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-token-mcp-")) },
    });
    ids.key = await t.createPrincipal("Team backend");
    const client = t.as(ids.key);
    const workspaceA = await createWorkspace(client, "End user A's research");
    const workspaceB = await createWorkspace(client, "Another end user's research");
    ids.workspaceA = workspaceA.id;
    ids.secret = (await publish(client, { title: "B's findings", content: SECRET })).version.publication.id;
    expectType(
      (await client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspaceB.id, targetId: ids.secret } })).linkToWorkspace,
      "LinkToWorkspaceSuccess",
    );
    const env = [
      { name: "DOSSIER_URL", value: t.server!.url },
      { name: "DOSSIER_API_KEY", value: ids.key },
    ];
    const input = { name: "dossier", transport: "STDIO" as const, command: process.execPath, args: [...NODE_FLAGS, MCP_MAIN], env };
    expectType((await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    ids.token = expectType(
      (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspaceA.id, operations: ["READ", "ADMIT"] }] } }))
        .createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  }, 120_000);
  afterAll(async () => t?.close());

  /** Admits a run in workspace A calling Dossier's MCP read_material on B's publication; the settled run and the tools its first request offered. */
  async function readOutsideThroughMcp(bearer: string) {
    recorder.offered.length = 0;
    const question = callTools({ name: "mcp__dossier__read_material", arguments: { publicationId: ids.secret, version: 1 } });
    const { run } = await admit(t.as(bearer), { workspaceId: ids.workspaceA, question });
    const done = await settled(t.as(ids.key), run.id, 30_000);
    return { done, offered: recorder.offered[0] ?? [] };
  }

  it("a token's run is offered none of its tools: read_material outside the token's workspaces reads nothing, decide_tool_call is absent", async () => {
    const { done, offered } = await readOutsideThroughMcp(ids.token);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toBe('Error: there is no tool named "mcp__dossier__read_material".');
    expect(JSON.stringify(done)).not.toContain("B-PRIVATE-CONTENT");
    expect(offered).toContain("read_material");
    expect(offered.filter((name) => name.startsWith("mcp__"))).toEqual([]);
  });

  it("an API key's run keeps them: it reads the publication through the MCP server and is offered decide_tool_call", async () => {
    const { done, offered } = await readOutsideThroughMcp(ids.key);
    expect(done.status).toBe("SUCCEEDED");
    expect(JSON.parse(done.answer!).content).toBe(SECRET);
    expect(offered).toEqual(expect.arrayContaining(["mcp__dossier__read_material", "mcp__dossier__decide_tool_call", "mcp__dossier__admit_run"]));
  });
});
