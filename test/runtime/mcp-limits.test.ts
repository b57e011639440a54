// What an MCP server may send, at the adapter: tool listing stops at its page and tool limits and
// gives up after its time; an answer over the byte cap is refused while it arrives, from a real
// HTTP server that would otherwise stream without end.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_MCP_LIMITS, listToolsBounded, type McpMessageTooLarge, sizeCappedFetch } from "../../src/runtime/adapters/mcp-limits.js";

const page = (n: number, size: number) => ({
  tools: Array.from({ length: size }, (_, i) => ({ name: `t${n}_${i}`, inputSchema: { type: "object" } })),
  nextCursor: String(n + 1),
});

describe("tool listing", () => {
  it("follows at most listMaxPages pages and keeps at most listMaxTools tools", async () => {
    let asked = 0;
    const endless = async (cursor: string | undefined) => {
      asked += 1;
      return page(Number(cursor ?? 0), 1);
    };
    const byPages = await listToolsBounded(endless, { ...DEFAULT_MCP_LIMITS, listMaxPages: 3 });
    expect([byPages.tools.length, byPages.truncated, asked]).toEqual([3, true, 3]);
    const byTools = await listToolsBounded(async (cursor) => page(Number(cursor ?? 0), 10), { ...DEFAULT_MCP_LIMITS, listMaxTools: 25 });
    expect([byTools.tools.length, byTools.truncated]).toEqual([25, true]);
    const finite = await listToolsBounded(async () => ({ tools: page(0, 2).tools }), DEFAULT_MCP_LIMITS);
    expect([finite.tools.length, finite.truncated]).toEqual([2, false]);
  });

  it("gives up after listTimeoutMs in all, whatever each page takes", async () => {
    const slow = (_cursor: string | undefined, signal: AbortSignal) =>
      new Promise<ReturnType<typeof page>>((resolve, reject) => {
        const timer = setTimeout(() => resolve(page(0, 1)), 150);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
    const started = Date.now();
    await expect(listToolsBounded(slow, { ...DEFAULT_MCP_LIMITS, listTimeoutMs: 400 })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("an answer over the byte cap", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  it("is refused while it arrives: the body stops at the cap and the refusal is reported; GET streams are not counted", async () => {
    let written = 0;
    server = createServer((req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const piece = Buffer.alloc(65_536, "e");
      // Endless, as fast as the socket drains, until the reader goes away.
      const pump = () => {
        while (!res.destroyed && written < 200 * 1024 * 1024) {
          written += piece.length;
          if (!res.write(piece)) return void res.once("drain", pump);
        }
        res.end();
      };
      if (req.method === "POST") pump();
      else res.end("x".repeat(300_000));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const refused: McpMessageTooLarge[] = [];
    const capped = sizeCappedFetch(fetch, 1_048_576, (error) => refused.push(error));
    const answer = await capped(url, { method: "POST", body: "{}" });
    await expect(answer.text()).rejects.toThrow(/larger than 1,048,576 bytes \(MCP_RESULT_MAX_BYTES\)/);
    expect(refused).toHaveLength(1);
    // Stopped near the cap, not after the server's 200 MB (socket buffers hold a few MB at most).
    expect(written).toBeLessThan(32 * 1024 * 1024);
    expect((await (await capped(url, { method: "GET" })).text()).length).toBe(300_000);
  });
});
