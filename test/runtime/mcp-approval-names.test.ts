// Approvals of MCP tools whose exposed names Dossier had to fit to model APIs (cut at 64
// characters, characters replaced, `_2` on a collision): the operator's rules see the tool's full
// name too, and an approval holds for the tool the person approved, never for another tool the
// same exposed name has come to mean since the server's tool list changed.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, McpServersDocument, RunApprovalsDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { pendingApprovals } from "../../src/mcp/approval-tools.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
/** The test server's tool of 70 characters (variant "names"). */
const LONG_DELETE_TOOL = "repositories_bulk_archive_and_delete_every_branch_older_than_ninety_dd";

describe("approvals of MCP tools with fitted names", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  let logFile = "";
  async function start(): Promise<TestApp> {
    logFile = path.join(mkdtempSync(path.join(tmpdir(), "dossier-mcp-names-")), "servers.log");
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`], stdioEnv: ["MCP_TEST_LOG"] },
      runtime: {
        model: toolCallingModel("mcp"),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        leaseMs: 5_000,
        approvals: { rules: { "*delete*": "always" } },
      },
    });
    return t;
  }

  async function addServer(app: TestApp, name: string, servedAs = name) {
    const input = {
      name,
      transport: "STDIO" as const,
      command: process.execPath,
      args: ["--import", "tsx", SERVER_SCRIPT, "--name", servedAs, "--variant", "names"],
      env: [{ name: "MCP_TEST_LOG", value: logFile }],
    };
    expectType((await app.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
  }

  /** The server's tools as the owner's status shows them: original name → exposed name. */
  async function toolsOf(app: TestApp): Promise<Record<string, string>> {
    const server = (await app.client.request(McpServersDocument)).mcpServers.edges[0]!.node;
    return Object.fromEntries(server.status.tools.map((tool) => [tool.name, tool.exposedName]));
  }

  /** The run's pending approvals once it has stopped running: it must be WAITING on them. */
  async function waiting(app: TestApp, runId: string) {
    const run = await waitUntil(async () => {
      const current = expectType((await app.client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    });
    expect(run.status).toBe("WAITING");
    return run.pendingApprovals.edges.map((edge) => edge.node);
  }

  /** The calls the server executed, by tool name, from its log. */
  const executed = () =>
    (existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n") : []).filter((line) => line.startsWith("call ")).map((line) => line.split(" ")[1]);

  it("holds a call under *delete* when the tool's exposed name was cut before the word", async () => {
    const app = await start();
    await addServer(app, "acme-internal-admin-tools");
    const exposed = (await toolsOf(app))[LONG_DELETE_TOOL]!;
    expect(exposed).toBe("mcp__acme-internal-admin-tools__repositories_bulk_archive_and_de");

    const { run } = await admit(app.client, { question: callTools({ name: exposed }) });
    const pending = await waiting(app, run.id);
    expect(pending.map((approval) => [approval.toolName, approval.mcpTool])).toEqual([[exposed, `acme-internal-admin-tools/${LONG_DELETE_TOOL}`]]);
    expect(executed()).toEqual([]);

    expectType(
      (await app.client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: pending[0]!.toolCallId, decision: "APPROVE" } })).decideToolCall,
      "DecideToolCallSuccess",
    );
    expect((await settled(app.client, run.id)).answer).toBe(`${LONG_DELETE_TOOL} done`);
    expect(executed()).toEqual([LONG_DELETE_TOOL]);
  });

  it("runs neither tool when the approved call's name has come to mean another tool by the time it resumes", async () => {
    const app = await start();
    await addServer(app, "fs");
    expect(await toolsOf(app)).toMatchObject({ "delete.cache": "mcp__fs__delete_cache", delete_cache: "mcp__fs__delete_cache_2" });

    // The model calls `mcp__fs__delete_cache`, which means `delete.cache` now; the person approves that.
    const { run } = await admit(app.client, { question: callTools({ name: "mcp__fs__delete_cache" }) });
    const pending = await waiting(app, run.id);
    expect(pending.map((approval) => approval.mcpTool)).toEqual(["fs/delete.cache"]);
    // MCP get_run names the tool as its server lists it, not only the name offered to the model.
    expect(await pendingApprovals(app.client, run.id)).toEqual([expect.objectContaining({ toolName: "mcp__fs__delete_cache", mcpTool: "fs/delete.cache" })]);

    // Meanwhile the server drops `delete.cache` (tools/list_changed): `mcp__fs__delete_cache` now means `delete_cache`.
    const { run: other } = await admit(app.client, { question: callTools({ name: "mcp__fs__forget_dotted" }) });
    expect((await settled(app.client, other.id)).answer).toBe("removed delete.cache");
    await waitUntil(async () => ((await toolsOf(app)).delete_cache === "mcp__fs__delete_cache" ? true : undefined));

    expectType(
      (await app.client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: pending[0]!.toolCallId, decision: "APPROVE" } })).decideToolCall,
      "DecideToolCallSuccess",
    );
    const done = await settled(app.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toBe(
      '[not executed: "mcp__fs__delete_cache" no longer names the tool the person approved (fs/delete.cache); it now names fs/delete_cache, ' +
        "as the server's tool list changed. The call was not run; a new call is decided anew.]",
    );
    expect(executed()).toEqual([]);
  });

  /** Holds a call of `delete_cache` (exposed as mcp__fs__delete_cache_2), changes what it is while the call waits, then approves it. */
  async function approvedAfter(change: (app: TestApp) => Promise<void>) {
    const app = await start();
    await addServer(app, "fs");
    const { run } = await admit(app.client, { question: callTools({ name: "mcp__fs__delete_cache_2" }) });
    const pending = await waiting(app, run.id);
    expect(pending.map((approval) => approval.mcpTool)).toEqual(["fs/delete_cache"]);
    expect(await pendingApprovals(app.client, run.id)).toEqual([expect.objectContaining({ toolName: "mcp__fs__delete_cache_2", mcpTool: "fs/delete_cache" })]);
    await change(app);
    expectType(
      (await app.client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: pending[0]!.toolCallId, decision: "APPROVE" } })).decideToolCall,
      "DecideToolCallSuccess",
    );
    return settled(app.client, run.id);
  }
  const REDEFINED =
    '[not executed: the tool "mcp__fs__delete_cache_2" (fs/delete_cache) changed since the person approved the call: its server re-listed it ' +
    "with another description or input schema, or the server was reconfigured. The call was not run; a new call is decided anew.]";

  it("does not run an approved call whose tool the server re-listed with another description while it waited", async () => {
    const done = await approvedAfter(async (app) => {
      const { run: other } = await admit(app.client, { question: callTools({ name: "mcp__fs__redescribe" }) });
      expect((await settled(app.client, other.id)).answer).toBe("redescribed delete_cache");
      await waitUntil(async () => {
        const server = (await app.client.request(McpServersDocument)).mcpServers.edges[0]!.node;
        return server.status.tools.find((tool) => tool.name === "delete_cache")?.description?.includes("backups") ? true : undefined;
      });
    });
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: REDEFINED });
    expect(executed()).toEqual([]);
  });

  it("does not run an approved call whose server the owner pointed elsewhere while it waited", async () => {
    // The same tools, from another program: the endpoint the person approved a call of is not the one it would run on.
    const done = await approvedAfter((app) => addServer(app, "fs", "fs-elsewhere"));
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: REDEFINED });
    expect(executed()).toEqual([]);
  });
});
