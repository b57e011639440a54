// A slow tools/list — another principal's MCP server — counts against the run's deadline and
// never holds a worker slot past it: with one slot, the slow principal's run ends TIMED_OUT at its
// deadline and another principal's trivial run goes right after; the listing itself gives up
// after MCP_LIST_TIMEOUT_MS and the server shows as failed.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { DEFAULT_MCP_LIMITS } from "../../src/runtime/adapters/mcp-limits.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");

describe("a slow tools/list", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("does not hold the worker's only slot past the run's deadline; the listing gives up after MCP_LIST_TIMEOUT_MS", { timeout: 60_000 }, async () => {
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} …`], limits: { ...DEFAULT_MCP_LIMITS, listTimeoutMs: 12_000 } },
      runtime: { model: toolCallingModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-slow-list-")), concurrency: 1 },
    });
    const slow = t.as(await t.createPrincipal("slow"));
    const input = {
      name: "sluggish",
      transport: "STDIO" as const,
      command: process.execPath,
      args: ["--import", "tsx", SERVER_SCRIPT, "--name", "sluggish", "--variant", "slow-list"],
    };
    expectType((await slow.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");

    const started = Date.now();
    const { run: stuck } = await admit(slow, { question: callTools({ name: "task_list", arguments: { action: "list" } }), limits: { deadlineSeconds: 2 } });
    const { run: trivial } = await admit(t.client, { question: callTools({ name: "task_list", arguments: { action: "list" } }) });
    const [stuckDone, trivialDone] = await Promise.all([settled(slow, stuck.id, 30_000), settled(t.client, trivial.id, 30_000)]);
    expect(stuckDone.status).toBe("TIMED_OUT");
    expect(trivialDone.status).toBe("SUCCEEDED");
    // The server lists after 60 s and the listing gives up after 12 s: the slow run ended at its
    // deadline, before either, and the trivial one soon after it (3.5 s and 6.7 s measured here).
    expect(new Date(stuckDone.finishedAt!).getTime() - started).toBeLessThan(10_000);
    expect(new Date(trivialDone.finishedAt!).getTime() - started).toBeLessThan(12_000);

    // The listing itself stopped at its own limit: the server is failed, not connecting forever.
    const status = await waitUntil(async () => {
      const [server] = (await slow.request(McpServersDocument, {})).mcpServers.edges.map((edge) => edge.node);
      return server?.status.state === "FAILED" ? server.status : undefined;
    }, 20_000);
    expect(status.error).toMatch(/timed out|failed/);
  });
});
