// A tool call cut off by its signal (the run's tool timeout, a stop) against an HTTP MCP server
// that never answers: the call's HTTP request is aborted with it, so the server sees it closed —
// not held open until the server answers, nor in the connection pool meanwhile.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { mcpSdkConnector } from "../../src/runtime/adapters/mcp-sdk-client.js";
import { waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An MCP server over HTTP that answers the handshake and holds every tools/call open; counts those open. */
async function silentServer() {
  let open = 0;
  let received = 0;
  const server = http.createServer((req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      if (message.method === "initialize") {
        const result = { protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "silent", version: "1" } };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      } else if (message.method === "tools/call") {
        open += 1;
        received += 1;
        res.on("close", () => (open -= 1));
      } else {
        res.writeHead(202).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, open: () => open, received: () => received };
}

describe("a tool call cut off by its signal", () => {
  it("closes its HTTP request: 20 calls cut at 300 ms leave none open at the server", async () => {
    const server = await silentServer();
    const events = { onClosed: () => undefined, onToolsChanged: () => undefined };
    const client = await mcpSdkConnector(() => globalThis.fetch)(
      { transport: "HTTP", url: server.url, headers: {} },
      events,
      AbortSignal.timeout(10_000),
      "p1",
    );
    cleanups.push(() => client.close());
    const calls = Array.from({ length: 20 }, () =>
      client.callTool("slow", {}, AbortSignal.timeout(300)).then(
        () => "answered",
        () => "cut",
      ),
    );
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 20 }, () => "cut"));
    expect(server.received()).toBe(20);
    await waitFor(() => server.open() === 0, 3_000);
    expect(server.open()).toBe(0);
  }, 30_000);
});
