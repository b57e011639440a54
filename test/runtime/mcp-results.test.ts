// A tool's answer is data for the model, kept as the MCP server sent it: never checked against the
// tool's output schema, never refused for its shape. A real stdio server written without the SDK
// (test/support/mcp-raw-server.ts) answers exactly what it writes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { mcpSdkConnector } from "../../src/runtime/adapters/mcp-sdk-client.js";
import type { McpClient } from "../../src/runtime/ports/mcp.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-raw-server.ts");
const serverArgs = (...extra: string[]) => ["--import", "tsx", SERVER_SCRIPT, ...extra];

/** The longest the event loop went without running a 10 ms timer while `work` ran. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  let stallMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 10);
  try {
    return { value: await work(), stallMs };
  } finally {
    clearInterval(timer);
  }
}

describe("MCP tool results", () => {
  let t: TestApp | undefined;
  let client: McpClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await t?.close();
    t = undefined;
  });

  const connect = async (...extra: string[]) => {
    const connector = mcpSdkConnector(() => fetch);
    const endpoint = { transport: "STDIO" as const, command: process.execPath, args: serverArgs(...extra), env: {}, cwd: projectRoot };
    client = await connector(endpoint, { onToolsChanged: () => undefined, onClosed: () => undefined }, AbortSignal.timeout(30_000), "p1");
    return client;
  };

  it("reach the model as the server sent them: text of a tool with an output schema, a block of an unknown type beside text, structured content", async () => {
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`] },
      runtime: { model: toolCallingModel("mcp"), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000 },
    });
    // A short string: the pattern is quick to refuse here; how long it can take is the next test's.
    const input = { name: "raw", transport: "STDIO" as const, command: process.execPath, args: serverArgs("--redos-length", "5") };
    expectType((await t.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    const names = ["shaped", "odd", "redos", "structured"];
    const { run } = await admit(t.client, { question: callTools(...names.map((name) => ({ name: `mcp__raw__${name}` }))) });
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer!.split("\n---\n")).toEqual([
      "shaped: the text the tool returned",
      "odd: the text block\n[video video/mp4 omitted]",
      "redos: the text the tool returned",
      '{"count":3}',
    ]);
  });

  it("are not checked against a server's output schema: a catastrophic pattern never runs, the process keeps serving", async () => {
    // The SDK's check of "a"×30 + "!" against `^(a+)+$` held the event loop for seconds.
    const mcp = await connect("--redos-length", "30");
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("redos");
    const { value, stallMs } = await longestStall(() => mcp.callTool("redos", {}, AbortSignal.timeout(30_000)));
    expect(value).toEqual({ text: "redos: the text the tool returned", isError: false });
    expect(stallMs).toBeLessThan(1_000);
  });

  it("keep structured content nested deeper than JSON.stringify follows, as its JSON text", async () => {
    const mcp = await connect("--deep");
    const deep = "[".repeat(20_000) + "]".repeat(20_000);
    expect(await mcp.callTool("deep", {}, AbortSignal.timeout(30_000))).toEqual({ text: `{"deep":${deep}}`, isError: false });
  });

  it("are listed and called when a tool's output schema is one no JSON Schema library compiles", async () => {
    const mcp = await connect("--bad-schema");
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toEqual(["shaped", "redos", "odd", "structured", "unlistable"]);
    expect(await mcp.callTool("unlistable", {}, AbortSignal.timeout(30_000))).toEqual({ text: "unlistable: answered", isError: false });
  });
});
