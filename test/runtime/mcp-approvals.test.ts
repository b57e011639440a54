// An MCP server whose owner requires approval (requireApproval on UpsertMcpServerInput): every
// call of its tools waits for the owner's decision, whatever TOOL_APPROVALS says; the same
// server without it runs its calls at once.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");

describe("MCP servers that require approval", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("holds every call of the server's tools for the owner, and runs them at once once it no longer requires it", async () => {
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} --name notes`] },
      runtime: { model: toolCallingModel("mcp"), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000, sweepMs: 200 },
    });
    const client = t.client;
    const upsert = async (requireApproval: boolean) => {
      const input = {
        name: "notes",
        transport: "STDIO" as const,
        command: process.execPath,
        args: ["--import", "tsx", SERVER_SCRIPT, "--name", "notes"],
        requireApproval,
      };
      return expectType((await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess").mcpServer;
    };
    expect((await upsert(true)).requireApproval).toBe(true);

    const { run } = await admit(client, { question: callTools({ name: "mcp__notes__echo", arguments: { text: "hello" } }) });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current : undefined;
    });
    expect(held.pendingApprovals.edges.map((edge) => edge.node).map((a) => a.toolName)).toEqual(["mcp__notes__echo"]);
    const decided = await client.request(DecideToolCallDocument, {
      input: { runId: run.id, toolCallId: held.pendingApprovals.edges.map((edge) => edge.node)[0]!.toolCallId, decision: "APPROVE" },
    });
    expectType(decided.decideToolCall, "DecideToolCallSuccess");
    const done = await settled(client, run.id);
    expect(done.answer).toBe("notes: hello");
    const executed = done.trace!.spans.find((s) => s.kind === "TOOL_CALL" && s.attributes.includes('"dossier.approval":"APPROVE"'));
    expect(executed).toBeDefined();

    expect((await upsert(false)).requireApproval).toBe(false);
    const { run: free } = await admit(client, { question: callTools({ name: "mcp__notes__echo", arguments: { text: "again" } }) });
    const freeDone = await settled(client, free.id);
    expect(freeDone.answer).toBe("notes: again");
    expect(freeDone.attempts).toHaveLength(1);
  });
});
