// R14: a principal's MCP connections close once no run holds them and no one used them for the
// idle period (MCP_IDLE_CLOSE_MS): open connections and STDIO processes follow the principals
// active now, not every principal ever seen. Real MCP servers: the test server as STDIO processes
// (each logs its start and exit) and an HTTP server with sessions, whose open event streams (one
// per connected client) are counted. The registry's clock is the test's.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { McpServerRecord } from "../../src/domain/capabilities/mcp-server-service.js";
import { commandLinesOf } from "../../src/domain/capabilities/stdio-policy.js";
import { createEventBus } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import { mcpSdkConnector } from "../../src/runtime/adapters/mcp-sdk-client.js";
import { McpRegistry } from "../../src/runtime/mcp/mcp-registry.js";
import type { McpConnector } from "../../src/runtime/ports/mcp.js";
import { projectRoot } from "../support/processes.js";
import { waitFor } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
const IDLE_MS = 60_000;
type Row = McpServerRecord & { ownerId: string };

/** An MCP server over streamable HTTP with sessions: each connected client keeps one event stream (GET) open. */
async function sessionMcpServer(): Promise<{ url: string; openStreams: () => number; close(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let open = 0;
  const http: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const message = body ? JSON.parse(body) : undefined;
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => void sessions.set(sid, created) });
      const server = new McpServer({ name: "sessions", version: "1.0.0" });
      server.registerTool("ping", { description: "Answers pong.", inputSchema: { text: z.string().optional() } }, async () => ({
        content: [{ type: "text", text: "pong" }],
      }));
      await server.connect(created);
      transport = created;
    }
    if (req.method === "GET") {
      open += 1;
      res.on("close", () => (open -= 1));
    }
    await transport.handleRequest(req, res, message);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    openStreams: () => open,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

describe("idle MCP connections", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  let logFile = "";
  const logLines = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").filter(Boolean) : []);
  const started = (label: string) => logLines().filter((line) => line.startsWith(`start ${label} `)).length;
  const exited = (label: string) => logLines().filter((line) => line.startsWith(`exit ${label} `)).length;

  const stdio = (ownerId: string, label: string, id = `${ownerId}-alpha`): Row => ({
    id,
    ownerId,
    name: "alpha",
    transport: "STDIO",
    command: process.execPath,
    args: ["--import", "tsx", SERVER_SCRIPT, "--name", label],
    env: [{ name: "MCP_TEST_LOG", value: logFile }],
    url: null,
    headers: [],
    enabled: true,
    requireApproval: false,
  });
  const http = (ownerId: string, url: string): Row => ({
    id: `${ownerId}-web`,
    ownerId,
    name: "web",
    transport: "HTTP",
    command: null,
    args: [],
    env: [],
    url,
    headers: [],
    enabled: true,
    requireApproval: false,
  });

  /** A registry over `rows` (changed by the test), its clock `clock.now`; `reads` records each read's principals, `connects` each connect. */
  function start(rows: Row[]) {
    logFile = path.join(mkdtempSync(path.join(tmpdir(), "dossier-mcp-idle-")), "servers.log");
    const clock = { now: 1_000_000 };
    const reads: string[][] = [];
    const gate = { held: undefined as Promise<void> | undefined };
    const sdk = mcpSdkConnector(() => globalThis.fetch);
    let connects = 0;
    const connector: McpConnector = (endpoint, events, signal, principalId) => {
      connects += 1;
      return sdk(endpoint, events, signal, principalId);
    };
    const events = createEventBus();
    const registry = new McpRegistry({
      servers: {
        listOf: async (principalIds) => {
          reads.push([...principalIds]);
          const snapshot = rows.filter((row) => principalIds.includes(row.ownerId));
          await gate.held;
          return snapshot;
        },
      },
      events,
      logger: silentLogger,
      connector,
      stdioCommands: commandLinesOf([`${process.execPath} --import tsx ${SERVER_SCRIPT} …`]),
      stdioEnv: ["MCP_TEST_LOG"],
      drainTimeoutMs: 30_000,
      idleCloseMs: IDLE_MS,
      now: () => clock.now,
    });
    cleanups.push(() => registry.close());
    return { registry, clock, reads, gate, events, connects: () => connects };
  }

  it("closes an idle principal's STDIO process and HTTP connection, keeps an active one's, and connects again on the next status read", async () => {
    const web = await sessionMcpServer();
    cleanups.push(web.close);
    const rows: Row[] = [];
    const { registry, clock } = start(rows);
    rows.push(stdio("p1", "p1-alpha"), http("p1", web.url), stdio("p2", "p2-alpha"));

    const first = await registry.status("p1");
    expect([...first.values()].map((s) => s.state)).toEqual(["CONNECTED", "CONNECTED"]);
    await registry.status("p2");
    await waitFor(() => web.openStreams() === 1);
    expect([started("p1-alpha"), started("p2-alpha")]).toEqual([1, 1]);

    // Not yet idle: nothing closes.
    clock.now += IDLE_MS - 1;
    await registry.status("p2");
    await registry.closeIdle();
    expect([exited("p1-alpha"), exited("p2-alpha")]).toEqual([0, 0]);
    expect(web.openStreams()).toBe(1);

    // p1 idle for the period: its process exits and its HTTP stream closes; p2, read since, stays.
    clock.now += 1;
    await registry.closeIdle();
    await waitFor(() => exited("p1-alpha") === 1 && web.openStreams() === 0);
    expect(exited("p2-alpha")).toBe(0);

    // The next status read connects again.
    const again = await registry.status("p1");
    expect([...again.values()].map((s) => [s.state, s.connects])).toEqual([
      ["CONNECTED", 2],
      ["CONNECTED", 2],
    ]);
    await waitFor(() => web.openStreams() === 1);
    expect([started("p1-alpha"), exited("p1-alpha"), started("p2-alpha"), exited("p2-alpha")]).toEqual([2, 1, 1, 0]);
  });

  it("keeps the connections a run holds open however long it lasts, and closes them an idle period after its attempt is over", async () => {
    const rows: Row[] = [];
    const { registry, clock } = start(rows);
    rows.push(stdio("p1", "p1-alpha"));
    const attempt = new AbortController();
    const [server] = await registry.snapshot("p1", undefined, attempt.signal);

    clock.now += 10 * IDLE_MS;
    await registry.closeIdle();
    const result = await registry.call(server!.connection, "echo", { text: "still here" }, AbortSignal.timeout(10_000));
    expect(result.text).toBe("p1-alpha: still here");
    expect([started("p1-alpha"), exited("p1-alpha")]).toEqual([1, 0]);

    // The attempt is over: its end counts as the last use.
    attempt.abort();
    await registry.closeIdle();
    expect(exited("p1-alpha")).toBe(0);
    clock.now += IDLE_MS;
    await registry.closeIdle();
    await waitFor(() => exited("p1-alpha") === 1);
  });

  it("gives a run that begins as the idle close happens a working connection, whichever comes first", async () => {
    const rows: Row[] = [];
    const { registry, clock } = start(rows);
    rows.push(stdio("p1", "p1-alpha"));
    await registry.status("p1");
    const echo = async (connection: Parameters<McpRegistry["call"]>[0], text: string) =>
      (await registry.call(connection, "echo", { text }, AbortSignal.timeout(10_000))).text;

    // The run begins, then the idle close, in one turn: the run holds the principal, nothing closes.
    clock.now += IDLE_MS;
    const first = new AbortController();
    const [[held]] = await Promise.all([registry.snapshot("p1", undefined, first.signal), registry.closeIdle()]);
    expect(await echo(held!.connection, "first")).toBe("p1-alpha: first");
    expect([started("p1-alpha"), exited("p1-alpha")]).toEqual([1, 0]);

    // The idle close, then the run, in one turn: the run connects anew while the old connection closes.
    first.abort();
    clock.now += IDLE_MS;
    const second = new AbortController();
    const [, [fresh]] = await Promise.all([registry.closeIdle(), registry.snapshot("p1", undefined, second.signal)]);
    expect(fresh!.connection.id).not.toBe(held!.connection.id);
    expect(await echo(fresh!.connection, "second")).toBe("p1-alpha: second");
    await waitFor(() => exited("p1-alpha") === 1);
    expect([started("p1-alpha"), exited("p1-alpha")]).toEqual([2, 1]);
    second.abort();
  });

  it("opens nothing for a dropped principal: neither its sync pending at the close nor a change heard after it", async () => {
    const rows: Row[] = [];
    const { registry, clock, reads, gate, events, connects } = start(rows);
    rows.push(stdio("p1", "p1-alpha"), stdio("p2", "p2-alpha"));
    await registry.status("p1");
    // p2 is held by a run throughout: changes for it are still heard and read.
    const p2 = new AbortController();
    await registry.snapshot("p2", undefined, p2.signal);
    expect(connects()).toBe(2);

    // p1's configuration changes; the sync this asks for is still reading when p1 is closed as idle.
    rows[0] = stdio("p1", "p1-alpha-2");
    let open!: () => void;
    gate.held = new Promise<void>((resolve) => (open = resolve));
    const pending = registry.sync("p1");
    clock.now += IDLE_MS;
    await registry.closeIdle();
    await waitFor(() => exited("p1-alpha") === 1);
    open();
    gate.held = undefined;
    await pending;
    expect(connects()).toBe(2);

    // A change of p1 heard after the close reads nothing; p2's, heard after it, is read.
    reads.length = 0;
    await vi.waitFor(
      () => {
        events.publish("mcp:changed", { principalId: "p1", at: new Date().toISOString() });
        events.publish("mcp:changed", { principalId: "p2", at: new Date().toISOString() });
        if (!reads.flat().includes("p2")) throw new Error("p2's change not read yet");
      },
      { timeout: 5_000, interval: 50 },
    );
    expect(reads.flat()).not.toContain("p1");
    expect(connects()).toBe(2);

    // p1's next status read connects, with its configuration as it is now.
    const status = await registry.status("p1");
    expect([...status.values()].map((s) => s.state)).toEqual(["CONNECTED"]);
    expect([connects(), started("p1-alpha-2"), started("p2-alpha"), exited("p2-alpha")]).toEqual([3, 1, 1, 0]);
    p2.abort();
  });
});
