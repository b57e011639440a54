// The connect timeout bounds the whole connect, not only the `initialize` request: a server that
// answers `initialize` but never the `notifications/initialized` that follows fails as timed out,
// and the principal's other servers are connected and offered meanwhile.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import { DEFAULT_MCP_LIMITS } from "../../src/runtime/adapters/mcp-limits.js";
import { mcpSdkConnector } from "../../src/runtime/adapters/mcp-sdk-client.js";
import { McpRegistry } from "../../src/runtime/mcp/mcp-registry.js";

let server: Server | undefined;
let registry: McpRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

/** Answers `initialize` and `tools/list`; on /hang never answers a notification. */
async function startServer(): Promise<string> {
  server = createServer((req, res) => {
    if (req.method !== "POST") return void res.writeHead(405).end();
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const message = JSON.parse(body);
      const answer = (result: object) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      };
      if (message.method === "initialize") {
        answer({ protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "x", version: "1" } });
      } else if (message.method === "tools/list") answer({ tools: [{ name: "echo", inputSchema: { type: "object" } }] });
      else if (req.url !== "/hang") res.writeHead(202).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const pendingAfter = (ms: number) => new Promise<string>((resolve) => setTimeout(() => resolve("still pending"), ms).unref());

it("the connector gives up at its signal even while the server holds `notifications/initialized`", { timeout: 30_000 }, async () => {
  const base = await startServer();
  const connecting = mcpSdkConnector(() => fetch, DEFAULT_MCP_LIMITS)(
    { transport: "HTTP", url: `${base}/hang`, headers: {} },
    { onToolsChanged() {}, onClosed() {} },
    AbortSignal.timeout(1_000),
    "p1",
  );
  const outcome = await Promise.race([
    connecting.then(
      () => "connected",
      (error: Error) => `rejected: ${error.message}`,
    ),
    pendingAfter(10_000),
  ]);
  expect(outcome).toMatch(/^rejected: .*timeout/i);
});

it("a server stuck after `initialize` fails as timed out, and the principal's other server is offered", { timeout: 60_000 }, async () => {
  const base = await startServer();
  const row = (name: string, path: string) => ({
    id: name,
    ownerId: "p1",
    name,
    transport: "HTTP" as const,
    command: null,
    args: [],
    env: [],
    url: base + path,
    headers: [],
    enabled: true,
    requireApproval: false,
  });
  registry = new McpRegistry({
    servers: { listOf: async () => [row("good", "/ok"), row("stuck", "/hang")] },
    events: createEventBus(),
    logger: silentLogger,
    connector: mcpSdkConnector(() => fetch),
    stdioCommands: [],
    stdioEnv: [],
    drainTimeoutMs: 1_000,
    connectTimeoutMs: 1_000,
  });
  const snapshot = await registry.snapshot("p1", AbortSignal.timeout(10_000));
  expect(snapshot.map((s) => [s.serverName, s.tools.map((tool) => tool.name)])).toEqual([["good", ["echo"]]]);

  const status = await Promise.race([registry.status("p1"), pendingAfter(10_000)]);
  expect(status).not.toBe("still pending");
  const states = Object.fromEntries([...(status as Map<string, { state: string; error: string | null }>)].map(([id, s]) => [id, [s.state, s.error]]));
  expect(states).toEqual({ good: ["CONNECTED", null], stuck: ["FAILED", "the connection timed out"] });
});
