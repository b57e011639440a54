// R14: MCP servers hot-plugged per principal. Real MCP servers (test/support/mcp-test-server.ts,
// the same SDK) over stdio and streamable HTTP; runs admitted through GraphQL call their tools.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  DeleteMcpServerDocument,
  McpServersDocument,
  type McpServersQuery,
  type UpsertMcpServerInput,
  UpsertMcpServerDocument,
} from "../../sdk/generated/graphql.js";
import type { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot, spawnTs, killAll, type Spawned } from "../support/processes.js";
import { callTools, settled, spanStarted, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");

describe("MCP servers", () => {
  let t: TestApp | undefined;
  const processes: Spawned[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await killAll(processes);
  });

  let logFile = "";
  async function start(options: { drainTimeoutMs?: number } = {}): Promise<{ t: TestApp; model: ScriptedModel }> {
    logFile = path.join(mkdtempSync(path.join(tmpdir(), "dossier-mcp-")), "servers.log");
    const model = toolCallingModel("mcp");
    t = await startTestApp("pglite", {
      // The test MCP servers listen on 127.0.0.1, inside the network: the operator allows it.
      mcp: {
        // The test server with any further arguments (--name, --variant); only its log file may be set.
        stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`],
        stdioEnv: ["MCP_TEST_LOG"],
        httpAllowedHosts: ["127.0.0.1"],
        drainTimeoutMs: options.drainTimeoutMs ?? 30_000,
      },
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000, toolTimeoutMs: 20_000 },
    });
    return { t, model };
  }

  const stdio = (name: string, label: string, variant = "a"): UpsertMcpServerInput => ({
    name,
    transport: "STDIO",
    command: process.execPath,
    args: ["--import", "tsx", SERVER_SCRIPT, "--name", label, "--variant", variant],
    env: [{ name: "MCP_TEST_LOG", value: logFile }],
  });

  async function upsert(input: UpsertMcpServerInput) {
    return expectType((await t!.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess").mcpServer;
  }

  async function servers(): Promise<McpServersQuery["mcpServers"]["edges"][number]["node"][]> {
    return (await t!.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node);
  }

  const logLines = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").filter(Boolean) : []);
  const started = (label: string) => logLines().filter((line) => line.startsWith(`start ${label} `)).length;
  const exited = (label: string) => logLines().filter((line) => line.startsWith(`exit ${label} `)).length;

  it("lets an in-flight call finish on the replaced connection, closes it afterwards, and gives the next run the new tools", async () => {
    const { t, model } = await start();
    await upsert(stdio("alpha", "alpha-1", "a"));
    const before = await servers();
    expect(before[0]!.status).toMatchObject({ state: "CONNECTED", connects: 1, draining: 0 });
    expect(before[0]!.status.tools.map((tool) => tool.exposedName)).toEqual([
      "mcp__alpha__add_tool",
      "mcp__alpha__echo",
      "mcp__alpha__fail",
      "mcp__alpha__slow",
    ]);

    // Long enough to outlast starting the replacement process on a loaded machine.
    const { run: first } = await admit(t.client, { question: callTools({ name: "mcp__alpha__slow", arguments: { ms: 6_000 } }) });
    await spanStarted(t.client, first.id, "MCP_CALL");

    // Mid-call, the server's configuration changes: a new connection with the new tool set…
    await upsert(stdio("alpha", "alpha-2", "b"));
    const during = await servers();
    expect(during[0]!.status).toMatchObject({ state: "CONNECTED", connects: 2, draining: 1 });
    expect(during[0]!.status.tools.map((tool) => tool.name)).toContain("fresh");
    // …while the old one stays open for the call in flight.
    expect(started("alpha-1")).toBe(1);
    expect(exited("alpha-1")).toBe(0);

    const done = await settled(t.client, first.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toBe("slow done after 6000 ms (alpha-1, variant a)");
    const mcpSpan = done.trace!.spans.find((span) => span.kind === "MCP_CALL")!;
    expect(mcpSpan).toMatchObject({ name: "mcp alpha/slow", status: "OK" });
    expect(done.trace!.spans.find((span) => span.id === mcpSpan.parentId)!.kind).toBe("TOOL_CALL");

    // The old connection closes once its last call has finished: its process exits.
    await waitFor(() => exited("alpha-1") === 1, 10_000);
    expect((await servers())[0]!.status).toMatchObject({ connects: 2, draining: 0 });

    const { run: second } = await admit(t.client, { question: callTools({ name: "mcp__alpha__fresh" }) });
    const next = await settled(t.client, second.id);
    expect(next).toMatchObject({ status: "SUCCEEDED", answer: "fresh" });
    const offered = model.requests.at(-1)!.tools.map((tool) => tool.name);
    expect(offered).toContain("mcp__alpha__fresh");
    expect(started("alpha-2")).toBe(1);
  });

  it("carries a NUL and an unpaired surrogate through an MCP call and back, stored exactly", async () => {
    const { t, model } = await start();
    await upsert(stdio("alpha", "alpha-1"));
    const hostile = "before\u0000middle\uD800end";
    // The question is JSON: its escapes are plain text to GraphQL; the model's arguments hold the raw characters.
    const { run } = await admit(t.client, { question: callTools({ name: "mcp__alpha__echo", arguments: { text: hostile } }) });
    const done = await settled(t.client, run.id);
    expect(done.messages.edges.find((e) => e.node.role === "TOOL")!.node.content).toBe(`alpha-1: ${hostile}`);
    expect(done.trace!.spans.filter((span) => span.status !== "OK")).toEqual([]);
    // The model was shown stand-ins, not the raw characters, and answered with what it saw.
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain("alpha-1: before␀middle\uFFFDend");
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "alpha-1: before␀middle\uFFFDend" });
  });

  it("reconnects only the server that changed when one of several is updated", async () => {
    const { t } = await start();
    await upsert(stdio("one", "one-1"));
    await upsert(stdio("two", "two-1"));
    await upsert(stdio("three", "three-1"));
    expect((await servers()).map((s) => [s.name, s.status.state, s.status.connects])).toEqual([
      ["one", "CONNECTED", 1],
      ["three", "CONNECTED", 1],
      ["two", "CONNECTED", 1],
    ]);
    await upsert(stdio("two", "two-2"));
    // Re-sending an unchanged configuration reconnects nothing either.
    await upsert(stdio("one", "one-1"));
    expect((await servers()).map((s) => [s.name, s.status.state, s.status.connects])).toEqual([
      ["one", "CONNECTED", 1],
      ["three", "CONNECTED", 1],
      ["two", "CONNECTED", 2],
    ]);
    await waitFor(() => exited("two-1") === 1, 10_000);
    expect(logLines().filter((line) => line.startsWith("start ")).length).toBe(4);
    expect(exited("one-1") + exited("three-1")).toBe(0);

    const { run } = await admit(t.client, {
      question: callTools({ name: "mcp__one__echo", arguments: { text: "a" } }, { name: "mcp__two__echo", arguments: { text: "b" } }),
    });
    expect((await settled(t.client, run.id)).answer).toBe("one-1: a\n---\ntwo-2: b");
  });

  it("closes a removed server's connection after its in-flight call, and no later than the drain timeout", async () => {
    const { t } = await start({ drainTimeoutMs: 500 });
    await upsert(stdio("gone", "gone-1"));
    const { run } = await admit(t.client, { question: callTools({ name: "mcp__gone__slow", arguments: { ms: 5_000 } }) });
    await spanStarted(t.client, run.id, "MCP_CALL");
    const deleted = await t.client.request(DeleteMcpServerDocument, { input: { name: "gone" } });
    expect(expectType(deleted.deleteMcpServer, "DeleteMcpServerSuccess").deletedName).toBe("gone");
    await waitFor(() => exited("gone-1") === 1, 5_000);
    const done = await settled(t.client, run.id);
    // The call was cut by the drain timeout: the model reads an error, and the run goes on.
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toMatch(/^Error: /);
    expect(done.trace!.spans.find((span) => span.kind === "MCP_CALL")!.status).toBe("ERROR");
    expect(await servers()).toEqual([]);
  });

  it("refreshes a server's tools on tools/list_changed for the runs that start afterwards", async () => {
    const { t, model } = await start();
    await upsert(stdio("dyn", "dyn-1"));
    const { run } = await admit(t.client, { question: callTools({ name: "mcp__dyn__add_tool" }) });
    expect((await settled(t.client, run.id)).answer).toBe("added the tool `added`");
    expect(model.requests.at(-1)!.tools.map((tool) => tool.name)).not.toContain("mcp__dyn__added");
    await expect
      .poll(async () => (await servers())[0]!.status.tools.map((tool) => tool.name), { timeout: 5_000, message: "the tool list was not refreshed" })
      .toContain("added");
    const { run: next } = await admit(t.client, { question: callTools({ name: "mcp__dyn__added" }) });
    expect((await settled(t.client, next.id)).answer).toBe("added works");
    expect(started("dyn-1")).toBe(1);
  });

  it("speaks streamable HTTP, reports a server's error result to the model, and reports unreachable servers", async () => {
    const server = spawnTs("test/support/mcp-test-server.ts", { args: ["--http", "--name", "web"] });
    processes.push(server);
    const url = (await server.waitForOutput(/listening (\S+)/)).split(" ")[1]!;
    const { t } = await start();
    await upsert({ name: "web", transport: "HTTP", url, headers: [{ name: "x-test", value: "secret" }] });
    // A port nothing listens on (any more).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await upsert({ name: "down", transport: "HTTP", url: `http://127.0.0.1:${closedPort}/mcp` });
    const listed = await servers();
    expect(listed.find((s) => s.name === "down")!.status.state).toBe("FAILED");
    // The kind of failure only: nothing of what answered (or did not) at the address.
    expect(listed.find((s) => s.name === "down")!.status.error).toBe("the connection failed (ECONNREFUSED)");
    const web = listed.find((s) => s.name === "web")!;
    expect(web).toMatchObject({ transport: "HTTP", headerNames: ["x-test"], status: { state: "CONNECTED" } });
    expect(JSON.stringify(web)).not.toContain("secret");

    const { run } = await admit(t.client, {
      question: callTools({ name: "mcp__web__echo", arguments: { text: "hi" } }, { name: "mcp__web__fail" }, { name: "mcp__down__echo" }),
    });
    const done = await settled(t.client, run.id);
    expect(done.answer).toBe('web: hi\n---\nError: this tool always fails\n---\nError: there is no tool named "mcp__down__echo".');
  });

  it("tells the principal why a server failed without repeating what answered at its address", async () => {
    // An internal service that is not an MCP server, answering with something private.
    const internal = createServer((_request, response) => response.writeHead(500, { "content-type": "text/plain" }).end("db_password=hunter2"));
    await new Promise<void>((resolve) => internal.listen(0, "127.0.0.1", resolve));
    try {
      await start();
      await upsert({ name: "probe", transport: "HTTP", url: `http://127.0.0.1:${(internal.address() as AddressInfo).port}/` });
      const probe = (await servers()).find((s) => s.name === "probe")!;
      expect(probe.status.state).toBe("FAILED");
      expect(probe.status.error).toBe("the server answered HTTP 500");
      expect(JSON.stringify(probe)).not.toContain("hunter2");
    } finally {
      await new Promise((resolve) => internal.close(resolve));
    }
  });

  it("refuses a program MCP_STDIO_COMMANDS does not list, naming the setting", async () => {
    const { t } = await start();
    for (const command of ["/usr/bin/touch", "node"]) {
      const refused = await t.client.request(UpsertMcpServerDocument, { input: { name: "other", transport: "STDIO", command } });
      expect(expectType(refused.upsertMcpServer, "ValidationError").issues).toEqual([
        { field: "command", message: `is not one of the programs MCP_STDIO_COMMANDS allows (${process.execPath})` },
      ]);
    }
    expect(await servers()).toEqual([]);
  });

  it("starts no program by default and only the listed ones otherwise, and keeps principals apart", async () => {
    const model = toolCallingModel();
    t = await startTestApp("pglite", { runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) } });
    const refused = await t.client.request(UpsertMcpServerDocument, { input: { name: "local", transport: "STDIO", command: process.execPath } });
    expect(expectType(refused.upsertMcpServer, "ValidationError").issues).toEqual([
      { field: "command", message: expect.stringContaining("MCP_STDIO_COMMANDS") },
    ]);
    expect((await servers()).map((server) => server.name)).toEqual([]);
    await t.client.request(UpsertMcpServerDocument, { input: { name: "remote", transport: "HTTP", url: "https://mcp.example.com/mcp", enabled: false } });
    const other = t.as(await t.createPrincipal("Other"));
    expect((await other.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node)).toEqual([]);
    const missing = await other.request(DeleteMcpServerDocument, { input: { name: "remote" } });
    expect(missing.deleteMcpServer.__typename).toBe("NotFoundError");
    expect((await servers())[0]!.status.state).toBe("DISABLED");
  });
});
