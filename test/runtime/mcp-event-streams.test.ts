// What an MCP server sends as events, through the real connector against a real HTTP server on
// loopback: the stream it speaks on unasked (GET) and a call answered with events are capped per
// message. An event that never ends fails the connection with McpMessageTooLarge and is dropped
// near the cap; a server's ordinary events, however many, still arrive.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_MCP_LIMITS, McpMessageTooLarge } from "../../src/runtime/adapters/mcp-limits.js";
import { mcpSdkConnector } from "../../src/runtime/adapters/mcp-sdk-client.js";
import type { McpClient } from "../../src/runtime/ports/mcp.js";
import { waitFor, withTimeout } from "../support/wait.js";

const MIB = 1_048_576;
/** What a hostile server offers to write to one endless event before it gives up. */
const BUDGET = 64 * MIB;
/** Stopped near the cap, not after the budget (loopback socket buffers hold a few MB at most). */
const READ_BOUND = 16 * MIB;

type Handlers = {
  /** The GET stream the server speaks on unasked. */
  listen(res: ServerResponse): void;
  /** A tools/call, answered as the test likes. */
  call?(res: ServerResponse, id: number): void;
};

const jsonRpc = (message: object) => JSON.stringify({ jsonrpc: "2.0", ...message });
const event = (message: object, eol = "\n") => `data: ${jsonRpc(message)}${eol}${eol}`;

/** Writes one event's data without end, as fast as the socket drains, until the reader goes away or the budget is spent. */
function endlessEvent(res: ServerResponse, counter: { written: number; spent?: () => void }): void {
  res.write("data: ");
  const piece = Buffer.alloc(65_536, "a");
  const pump = () => {
    while (!res.destroyed && counter.written < BUDGET) {
      counter.written += piece.length;
      if (!res.write(piece)) return void res.once("drain", pump);
    }
    counter.spent?.();
  };
  pump();
}

function mcpHttpServer(handlers: Handlers): Server {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      return handlers.listen(res);
    }
    if (req.method !== "POST") return void res.writeHead(405).end();
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      const answer = (result: object) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(jsonRpc({ id: message.id, result }));
      };
      if (message.method === "initialize") {
        answer({
          protocolVersion: message.params?.protocolVersion,
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: "events", version: "1" },
        });
      } else if (message.method === "tools/list") {
        answer({ tools: [{ name: "echo", inputSchema: { type: "object" } }] });
      } else if (message.method === "tools/call" && handlers.call) {
        handlers.call(res, message.id!);
      } else {
        res.writeHead(202).end();
      }
    });
  });
}

describe("an MCP server's event streams", () => {
  let server: Server | undefined;
  let client: McpClient | undefined;
  afterEach(async () => {
    await client?.close().catch(() => undefined);
    client = undefined;
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  async function connect(handlers: Handlers, resultMaxBytes: number, events: { onToolsChanged?: () => void; onClosed?: (error?: Error) => void } = {}) {
    server = mcpHttpServer(handlers);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const connector = mcpSdkConnector(() => fetch, { ...DEFAULT_MCP_LIMITS, resultMaxBytes });
    client = await connector(
      { transport: "HTTP", url, headers: {} },
      { onToolsChanged: events.onToolsChanged ?? (() => undefined), onClosed: events.onClosed ?? (() => undefined) },
      AbortSignal.timeout(10_000),
      "p1",
    );
    return client;
  }

  it("fails the connection with McpMessageTooLarge when an event on the GET stream never ends, and stops reading it near the cap", async () => {
    const stream: { written: number; spent?: () => void } = { written: 0 };
    const spent = new Promise<"budget spent">((resolve) => (stream.spent = () => resolve("budget spent")));
    let released!: Promise<unknown>;
    let closed!: (error?: Error) => void;
    const closedWith = new Promise<Error | undefined>((resolve) => (closed = resolve));
    await connect(
      {
        listen: (res) => {
          released = once(res, "close");
          endlessEvent(res, stream);
        },
      },
      MIB,
      { onClosed: (error) => closed(error) },
    );
    const outcome = await withTimeout(Promise.race([closedWith, spent]), 30_000);
    expect(outcome).toBeInstanceOf(McpMessageTooLarge);
    expect((outcome as Error).message).toMatch(/larger than 1,048,576 bytes \(MCP_RESULT_MAX_BYTES\)/);
    // The client let go of the stream: the server saw it close, having written near the cap only.
    await withTimeout(released, 5_000);
    expect(stream.written).toBeLessThan(READ_BOUND);
    await expect(client!.listTools()).rejects.toThrow();
  });

  it("passes a normal server's notifications on the GET stream, more bytes in all than the cap, and a call answered with many events", async () => {
    const pad = "x".repeat(1_000);
    const notifications = 200;
    let changed = 0;
    const mcp = await connect(
      {
        listen: (res) => {
          for (let i = 0; i < notifications; i += 1) {
            res.write(event({ method: "notifications/tools/list_changed", params: { _meta: { pad } } }, i % 2 ? "\r\n" : "\n"));
          }
        },
        call: (res, id) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          for (let i = 0; i < 200; i += 1) res.write(event({ method: "notifications/message", params: { level: "info", data: pad } }));
          res.end(event({ id, result: { content: [{ type: "text", text: "done" }] } }));
        },
      },
      65_536,
      { onToolsChanged: () => (changed += 1) },
    );
    // 200 events of about 1 KB each: over the 64 KiB cap in all, each far under it.
    await waitFor(() => changed === notifications);
    expect(await mcp.callTool("echo", {}, AbortSignal.timeout(10_000))).toEqual({ text: "done", isError: false });
  });

  it("refuses a call answered with an event that never ends, near the cap, and keeps the connection", async () => {
    const answer: { written: number } = { written: 0 };
    let released!: Promise<unknown>;
    let calls = 0;
    const mcp = await connect(
      {
        listen: () => undefined,
        call: (res, id) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          if ((calls += 1) > 1) return void res.end(event({ id, result: { content: [{ type: "text", text: "small" }] } }));
          released = once(res, "close");
          endlessEvent(res, answer);
        },
      },
      MIB,
    );
    await expect(mcp.callTool("echo", {}, AbortSignal.timeout(30_000))).rejects.toThrow(McpMessageTooLarge);
    await withTimeout(released, 5_000);
    expect(answer.written).toBeLessThan(READ_BOUND);
    expect(await mcp.callTool("echo", {}, AbortSignal.timeout(10_000))).toEqual({ text: "small", isError: false });
  });
});
