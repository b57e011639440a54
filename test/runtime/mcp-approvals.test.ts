// An MCP server whose owner requires approval (requireApproval on UpsertMcpServerInput): every
// call of its tools waits for the owner's decision, whatever TOOL_APPROVALS says; the same
// server without it runs its calls at once. Turned on while a run goes on, it holds that run's
// next call of the server's tools; turned off, a call already waiting still waits for its decision.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { DecideToolCallDocument, McpServersDocument, RunApprovalsDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
const NOTES = { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} --name notes`] };

/** Stores the `notes` server with requireApproval as given. */
async function upsertNotes(client: DossierClient, requireApproval: boolean) {
  const input = {
    name: "notes",
    transport: "STDIO" as const,
    command: process.execPath,
    args: ["--import", "tsx", SERVER_SCRIPT, "--name", "notes"],
    requireApproval,
  };
  return expectType((await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess").mcpServer;
}

/** The run once it waits for a decision on a call (or once it ended without). */
async function waitingRun(client: DossierClient, runId: string) {
  const run = await waitUntil(async () => {
    const current = expectType((await client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
    return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
  });
  expect(run.status).toBe("WAITING");
  return run;
}

/** toolCallingModel whose second request (the run's second turn) waits until released. */
function secondTurnHeld() {
  const scripted = toolCallingModel("mcp");
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let waiting = false;
  const model: ModelPort = {
    label: scripted.label,
    model: scripted.model,
    scripted: true,
    contextWindow: scripted.contextWindow,
    async complete(request, onEvent) {
      if (scripted.stepsTaken === 1) {
        waiting = true;
        await released;
      }
      return scripted.complete(request, onEvent);
    },
  };
  return { model, release, waiting: () => waiting };
}

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

  it("turned on while a run goes on: the run's next call of the server's tools waits for the owner", async () => {
    const held = secondTurnHeld();
    t = await startTestApp("pglite", {
      mcp: NOTES,
      runtime: { model: held.model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000, sweepMs: 200 },
    });
    const client = t.client;
    await upsertNotes(client, false);
    const question = callToolsInTurns([{ name: "mcp__notes__echo", arguments: { text: "one" } }], [{ name: "mcp__notes__echo", arguments: { text: "two" } }]);
    const { run } = await admit(client, { question });
    // The first turn's call ran at once; the run's second request waits.
    await waitUntil(async () => held.waiting() || undefined);
    expect((await upsertNotes(client, true)).requireApproval).toBe(true);
    // Reading the servers' status brings this instance's connections in line with what is stored.
    await client.request(McpServersDocument);
    held.release();

    const waiting = await waitingRun(client, run.id);
    const pending = waiting.pendingApprovals.edges.map((edge) => edge.node);
    expect(pending.map((approval) => [approval.toolName, approval.arguments])).toEqual([["mcp__notes__echo", '{"text":"two"}']]);
    // Turned off again: the call already waiting still waits for its decision.
    await upsertNotes(client, false);
    await client.request(McpServersDocument);
    const still = await waitingRun(client, run.id);
    expect(still.pendingApprovals.edges.map((edge) => edge.node.toolCallId)).toEqual([pending[0]!.toolCallId]);

    const decided = await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: pending[0]!.toolCallId, decision: "APPROVE" } });
    expectType(decided.decideToolCall, "DecideToolCallSuccess");
    const done = await settled(client, run.id);
    expect(done.answer).toBe("notes: one\n---\nnotes: two");
    const requested = done.trace!.spans.flatMap((span) => span.events).filter((event) => event.kind === "APPROVAL_REQUESTED");
    expect(requested).toHaveLength(1);
  });
});
