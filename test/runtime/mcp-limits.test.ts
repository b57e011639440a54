// What an MCP server may send, at the adapter: tool listing stops at its page and tool limits and
// gives up after its time; an answer over the byte cap is refused while it arrives, from a real
// HTTP server that would otherwise stream without end.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_MCP_LIMITS, listToolsBounded, type McpMessageTooLarge, sizeCappedFetch } from "../../src/runtime/adapters/mcp-limits.js";
import type { McpToolInfo } from "../../src/runtime/ports/mcp.js";

/** The characters a listing keeps of a tool: its name, its description and its input schema as JSON. */
const keptChars = (tools: McpToolInfo[]) =>
  tools.reduce((sum, t) => sum + t.name.length + (t.description?.length ?? 0) + JSON.stringify(t.inputSchema).length, 0);

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

  it("keeps each tool it can offer and skips, with why, one no run could call, counting positions across pages", async () => {
    const pages: Record<string, { tools: unknown[]; nextCursor?: unknown }> = {
      first: { tools: [{ name: "a", inputSchema: { type: "object" } }, "not a tool"], nextCursor: "second" },
      second: { tools: [{ name: 7, inputSchema: { type: "object" } }, { name: "b", inputSchema: [] }, { inputSchema: { type: "object" } }], nextCursor: 3 },
    };
    const listing = await listToolsBounded(async (cursor) => pages[cursor ?? "first"]!, DEFAULT_MCP_LIMITS);
    expect(listing).toEqual({
      tools: [
        { name: "a", description: undefined, inputSchema: { type: "object" } },
        { name: "b", description: undefined, inputSchema: { type: "object" }, inputSchemaReplaced: "the server's input schema: it is not a JSON object" },
      ],
      skipped: [
        { position: 1, reason: "not a JSON object" },
        { position: 2, reason: "its name is not text" },
        { position: 4, reason: "it has no name" },
      ],
      truncated: false,
    });
  });

  it("counts skipped entries against listMaxTools: pages of junk are not kept without bound", async () => {
    let asked = 0;
    const junk = async () => {
      asked += 1;
      return { tools: Array.from({ length: 5_000 }, () => 0), nextCursor: "more" };
    };
    const listing = await listToolsBounded(junk, { ...DEFAULT_MCP_LIMITS, listMaxTools: 1_000 });
    expect([listing.tools.length, listing.skipped.length, listing.truncated, asked]).toEqual([0, 1_000, true, 1]);
  });

  it("keeps 8,192 characters of a long description and says so, and at most 4,194,304 characters of tools in all", async () => {
    // A server's worst: 50 pages, each of one tool whose description nearly fills a 10 MB message.
    const huge = "h".repeat(9_700_000);
    const hugePages = async (cursor: string | undefined) => {
      const n = Number(cursor ?? 0);
      return { tools: [{ name: `huge_${n}`, description: huge, inputSchema: { type: "object" } }], nextCursor: String(n + 1) };
    };
    const cut = await listToolsBounded(hugePages, DEFAULT_MCP_LIMITS);
    expect([cut.tools.length, cut.skipped.length, cut.truncated]).toEqual([50, 0, true]);
    const why = "the server's description takes 9,700,000 characters: only its first 8,192 are kept";
    expect(cut.tools[0]).toEqual({ name: "huge_0", description: `${"h".repeat(8_192)} [… cut: ${why}]`, descriptionCut: why, inputSchema: { type: "object" } });
    expect(keptChars(cut.tools)).toBeLessThan(50 * 8_400);

    // Tools of 60,000 characters each: the 69th would take the listing past 4,194,304.
    const schema = { type: "object", properties: { q: { type: "string", description: "" } } };
    schema.properties.q.description = "s".repeat(60_000 - JSON.stringify(schema).length - "w_00".length);
    const wide = Array.from({ length: 100 }, (_, i) => ({ name: `w_${String(i).padStart(2, "0")}`, inputSchema: schema }));
    const bounded = await listToolsBounded(async () => ({ tools: [...wide, { name: "small", inputSchema: { type: "object" } }] }), DEFAULT_MCP_LIMITS);
    expect(bounded.tools.map((tool) => tool.name)).toEqual([...wide.slice(0, 69).map((tool) => tool.name), "small"]);
    expect(keptChars(bounded.tools)).toBe(69 * 60_000 + "small".length + JSON.stringify({ type: "object" }).length);
    expect(bounded.skipped).toHaveLength(31);
    expect(bounded.skipped[0]).toEqual({
      position: 69,
      reason: "it takes 60,000 characters, and the tools kept before it 4,140,000: a listing keeps at most 4,194,304",
    });
  });

  it("skips a tool whose name takes more than 512 characters, and keeps one of 512", async () => {
    const listing = await listToolsBounded(
      async () => ({
        tools: [
          { name: "n".repeat(513), inputSchema: { type: "object" } },
          { name: "m".repeat(512), inputSchema: { type: "object" } },
        ],
      }),
      DEFAULT_MCP_LIMITS,
    );
    expect(listing.tools.map((tool) => tool.name.length)).toEqual([512]);
    expect(listing.skipped).toEqual([{ position: 0, reason: "its name takes 513 characters, more than 512" }]);
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

  it("is refused while it arrives: a POST's body stops at the cap and the refusal is reported; a GET stream's events are counted one by one", async () => {
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
    const capped = sizeCappedFetch(fetch, 1_048_576, (error) => void refused.push(error));
    const answer = await capped(url, { method: "POST", body: "{}" });
    await expect(answer.text()).rejects.toThrow(/larger than 1,048,576 bytes \(MCP_RESULT_MAX_BYTES\)/);
    expect(refused).toHaveLength(1);
    // Stopped near the cap, not after the server's 200 MB (socket buffers hold a few MB at most).
    expect(written).toBeLessThan(32 * 1024 * 1024);
    expect((await (await capped(url, { method: "GET" })).text()).length).toBe(300_000);
  });
});

describe("an event stream", () => {
  /** A stream answered in exactly these chunks, read through the cap. */
  const read = async (chunks: string[], maxBytes: number, method = "GET") => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        controller.close();
      },
    });
    const refused: string[] = [];
    const answer = new Response(body, { headers: { "content-type": "text/event-stream" } });
    const capped = sizeCappedFetch(
      async () => answer,
      maxBytes,
      (_error, refusedMethod) => void refused.push(refusedMethod),
    );
    const text = await (await capped("http://mcp.invalid/", { method })).text().catch((error: Error) => error.name);
    return { text, refused };
  };
  const data = (n: number) => `data: ${"d".repeat(n - 6)}`;

  it("counts the bytes since the last empty line, whatever ends its lines and wherever the chunks split them", async () => {
    // Events of 900 bytes under a 1,000-byte cap: 4,500 bytes in all.
    const chunks = [`${data(900)}\r\n\r`, `\n${data(900)}\n`, `\n${data(450)}`, `${"d".repeat(450)}\r\r`, `${data(900)}\r\n\n${data(900)}\n\r\n`];
    expect(await read(chunks, 1_000)).toEqual({ text: chunks.join(""), refused: [] });
    expect(await read(chunks, 1_000, "POST")).toEqual({ text: chunks.join(""), refused: [] });
    // A lone line end does not end the event; nor do lines of comments or fields.
    expect(await read([`${data(600)}\n`, `: still the same event\r\n${data(400)}\r\n\r\n`], 1_000)).toEqual({ text: "McpMessageTooLarge", refused: ["GET"] });
    expect(await read([`${data(500)}\r\n\r\n`, data(1_001)], 1_000, "POST")).toEqual({ text: "McpMessageTooLarge", refused: ["POST"] });
  });
});
