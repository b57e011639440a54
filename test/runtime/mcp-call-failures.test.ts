// An MCP call that fails on the way — the server answers a JSON-RPC error instead of a result, or
// its connection drops while the call waits — tells the model which tool failed and how, never the
// error's own text (a server's internal URL with its token, its files); the server's log has the
// error, its URLs redacted. A tool's own error result is the server's answer and reaches the model
// as the server wrote it. A real stdio server written without the SDK (test/support/mcp-raw-server.ts).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import type { Logger } from "../../src/logger.js";
import { admit, expectType } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { projectRoot } from "../support/processes.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-raw-server.ts");

describe("a failed MCP call, as the model and the log see it", () => {
  let t: TestApp | undefined;
  afterAll(async () => t?.close());

  it("names the tool and the kind of failure to the model and logs the error with its URLs redacted; the server's own error result stays as written", async () => {
    const logged: { message: string; fields?: Record<string, unknown> }[] = [];
    const keep = (message: string, fields?: Record<string, unknown>) => void logged.push({ message, fields });
    const logger: Logger = { debug: () => undefined, info: () => undefined, warn: keep, error: keep };
    t = await startTestApp("pglite", {
      logger,
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`] },
      runtime: { model: toolCallingModel("mcp"), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000 },
    });
    const input = { name: "raw", transport: "STDIO" as const, command: process.execPath, args: ["--import", "tsx", SERVER_SCRIPT, "--failing"] };
    expectType((await t.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    // The connection drops last: the first turn's calls are answered on it.
    const question = callToolsInTurns([{ name: "mcp__raw__refuse" }, { name: "mcp__raw__rpc_error" }], [{ name: "mcp__raw__hang_up" }]);
    const { run } = await admit(t.client, { question });
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer!.split("\n---\n")).toEqual([
      "Error: refuse: the quota of this key is spent",
      'Error: mcp__raw__rpc_error failed: the MCP server "raw" answered with a protocol error (JSON-RPC code -32603) instead of a result; the server\'s log has the details. Try again later, or go on without this call.',
      'Error: mcp__raw__hang_up failed: the connection to the MCP server "raw" closed before it answered; the server\'s log has the details. Try again later, or go on without this call.',
    ]);
    const failures = logged.filter((line) => line.message === "an MCP tool call failed");
    expect(failures.map((line) => [line.fields?.["tool"], line.fields?.["server"], line.fields?.["runId"]])).toEqual([
      ["mcp__raw__rpc_error", "raw", dbId(run.id)],
      ["mcp__raw__hang_up", "raw", dbId(run.id)],
    ]);
    const rpcError = String(failures[0]!.fields?.["error"]);
    expect(rpcError).toContain("MCP error -32603: upstream http://search.internal.example:9200/…/***?token=*** refused at /srv/search/app.js:12");
    expect(rpcError).not.toContain("SECRET-TOKEN-42");
    expect(String(failures[1]!.fields?.["error"])).toContain("Connection closed");
  });
});
