// Stdio is a command line, not a program: with the operator's entry listed, a principal can start
// exactly that command line — no extra arguments (no `-e <code>`), no NODE_OPTIONS or LD_PRELOAD,
// no environment name MCP_STDIO_ENV does not list — and each refusal is a ValidationError naming
// the setting. A real MCP server (test/support/mcp-test-server.ts) proves the listed line runs.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpServersDocument, type UpsertMcpServerInput, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
const FIXED_ARGS = ["--import", "tsx", SERVER_SCRIPT, "--name", "fixed"];

describe("STDIO command lines", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("refuses extra arguments, NODE_OPTIONS, LD_PRELOAD and unlisted names, naming the setting; the operator's full command line runs", async () => {
    const logFile = path.join(mkdtempSync(path.join(tmpdir(), "dossier-mcp-")), "servers.log");
    t = await startTestApp("pglite", { mcp: { stdioCommands: [[process.execPath, ...FIXED_ARGS].join(" ")], stdioEnv: ["MCP_TEST_LOG"] } });
    const upsert = async (input: Partial<UpsertMcpServerInput>) =>
      (
        await t!.client.request(UpsertMcpServerDocument, {
          input: { name: "local", transport: "STDIO", command: process.execPath, args: FIXED_ARGS, ...input },
        })
      ).upsertMcpServer;
    const issues = async (input: Partial<UpsertMcpServerInput>) => expectType(await upsert(input), "ValidationError").issues;

    // The attack from the report: code through an argument, or through the environment.
    const extra = await issues({ args: [...FIXED_ARGS, "--eval", "process.exit(3)"] });
    expect(extra).toEqual([{ field: "args", message: expect.stringContaining("MCP_STDIO_COMMANDS") }]);
    expect(extra[0]!.message).toContain("more may follow only where it ends with …");
    expect(await issues({ args: ["--eval", "1"] })).toEqual([{ field: "args", message: expect.stringContaining("MCP_STDIO_COMMANDS") }]);
    expect(await issues({ env: [{ name: "NODE_OPTIONS", value: "--import=data:text/javascript,console.log(process.env)" }] })).toEqual([
      { field: "env", message: "NODE_OPTIONS may never be set: it changes what the program runs" },
    ]);
    expect(await issues({ env: [{ name: "LD_PRELOAD", value: "/tmp/evil.so" }] })).toEqual([
      { field: "env", message: "LD_PRELOAD may never be set: it changes what the program runs" },
    ]);
    expect(await issues({ env: [{ name: "GITHUB_TOKEN", value: "x" }] })).toEqual([
      { field: "env", message: "GITHUB_TOKEN is not one of the names MCP_STDIO_ENV allows (MCP_TEST_LOG)" },
    ]);
    expect(await issues({ command: "/usr/bin/env" })).toEqual([
      { field: "command", message: `is not one of the programs MCP_STDIO_COMMANDS allows (${process.execPath})` },
    ]);
    expect(await t.app.db.prisma.mcpServer.count()).toBe(0);

    // Exactly the listed line, with a listed environment name: it starts and offers its tools.
    expectType(await upsert({ env: [{ name: "MCP_TEST_LOG", value: logFile }] }), "UpsertMcpServerSuccess");
    const connected = await waitUntil(async () => {
      const [server] = (await t!.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node);
      return server?.status.state === "CONNECTED" ? server : undefined;
    }, 60_000);
    expect(connected.status.tools.map((tool) => tool.exposedName)).toContain("mcp__local__echo");
  });

  it("does not start a stored server the operator's list no longer allows", async () => {
    t = await startTestApp("pglite", { mcp: { stdioCommands: [[process.execPath, ...FIXED_ARGS].join(" ")] } });
    // A row stored under an earlier, wider list: extra arguments and a refused name.
    await t.app.db.prisma.mcpServer.create({
      data: {
        ownerId: (await t.app.services.principals.ensureDevelopmentPrincipal()).principalId,
        name: "old",
        transport: "STDIO",
        command: process.execPath,
        args: [...FIXED_ARGS, "--eval", "1"],
        env: [{ name: "NODE_OPTIONS", value: "--inspect" }],
      },
    });
    const [server] = (await t.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node);
    const failed = await waitUntil(async () => {
      const [current] = (await t!.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node);
      return current?.status.state === "FAILED" ? current : undefined;
    });
    expect(server!.name).toBe("old");
    expect(failed.status.error).toMatch(/args must be exactly the arguments .*MCP_STDIO_COMMANDS.*; env NODE_OPTIONS may never be set/);
    expect(failed.status.connects).toBe(0);
  });
});
