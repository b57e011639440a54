// R14: the idle close of MCP connections with runs executing: a run holds its principal's
// connections for its whole attempt, however long it spends away from them; once it is over and
// the idle period (here 200 ms, on the system clock) has passed, the STDIO server exits (as it does an idle
// period after a status read); the next status read starts it again. Real MCP server processes (test/support/mcp-test-server.ts).
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { admit, expectType } from "../support/fixtures.js";
import { gateTool } from "../support/gate-tool.js";
import { projectRoot } from "../support/processes.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
const IDLE_MS = 200;

describe("idle MCP connections of runs", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("holds a run's connection while it waits elsewhere, and closes it an idle period after the run; the next status read connects again", async () => {
    const logFile = path.join(mkdtempSync(path.join(tmpdir(), "dossier-mcp-idle-runs-")), "servers.log");
    const lines = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").filter(Boolean) : []);
    const count = (what: "start" | "exit") => lines().filter((line) => line.startsWith(`${what} alpha `)).length;
    const gate = gateTool();
    t = await startTestApp("pglite", {
      mcp: {
        stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`],
        stdioEnv: ["MCP_TEST_LOG"],
        drainTimeoutMs: 30_000,
        idleCloseMs: IDLE_MS,
      },
      runtime: {
        model: toolCallingModel("mcp-idle"),
        extraTools: [gate.tool],
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        leaseMs: 5_000,
        toolTimeoutMs: 20_000,
      },
    });
    const client = t.client;
    const input = {
      name: "alpha",
      transport: "STDIO" as const,
      command: process.execPath,
      args: ["--import", "tsx", SERVER_SCRIPT, "--name", "alpha"],
      env: [{ name: "MCP_TEST_LOG", value: logFile }],
    };
    expectType((await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    const status = async () => (await client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node.status);
    // A status read starts the server; no one uses it since: it exits.
    expect(await status()).toMatchObject([{ state: "CONNECTED", connects: 1, draining: 0 }]);
    await waitFor(() => count("exit") === 1, 10_000);
    expect(count("start")).toBe(1);

    // The run waits on another tool for many idle periods, then calls the server's tool.
    const { run } = await admit(client, {
      question: callToolsInTurns([{ name: "wait" }], [{ name: "mcp__alpha__echo", arguments: { text: "after the wait" } }]),
    });
    await waitFor(() => gate.state.reached, 20_000);
    expect(count("start")).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 5 * IDLE_MS));
    expect(count("exit")).toBe(1);
    gate.state.open();
    const done = await settled(client, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "opened\n---\nalpha: after the wait" });

    // The run is over: the server exits once the idle period has passed.
    await waitFor(() => count("exit") === 2, 10_000);
    expect(count("start")).toBe(2);

    // The next status read starts it again.
    expect(await status()).toMatchObject([{ state: "CONNECTED", connects: 3, draining: 0 }]);
    expect([count("start"), count("exit")]).toEqual([3, 2]);
  });
});
