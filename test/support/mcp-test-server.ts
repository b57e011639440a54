// A real MCP server for tests, written with the same SDK Dossier's client uses. Over stdio by
// default; `--http` serves streamable HTTP on a free port and prints `listening <url>`.
//   --name <label>     shows in results and in the start/exit log
//   --variant <v>      "a": tools slow, echo; "b": adds fresh — a configuration change that
//                      yields a different tool set; "endless-list": tools/list always has a
//                      next page; "slow-list": tools/list answers after 60 s; "hostile":
//                      variant a's tools and `huge`; "names": only tools whose names Dossier must
//                      fit to model APIs (LONG_DELETE_TOOL, `delete.cache` and `delete_cache`, which
//                      both become `delete_cache`) and `forget_dotted`, which removes `delete.cache`
//   The tool `huge` (every variant but "a" and "b") answers `bytes` characters (an error result with `error`); with `stream`
//   it writes its answer straight to stdout (or the HTTP response) in 1 MiB pieces as the pipe
//   drains, as a server that streams a result it never holds whole would.
//   MCP_TEST_LOG=file  appends "start <label> <pid>" and "exit <label> <pid>" lines, and "call <tool> <label> <pid>"
//                      for each call of variant "names"' tools
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 && argv[at + 1] ? argv[at + 1]! : fallback;
};
const label = option("name", "test");
const variant = option("variant", "a");
const log = (line: string) => {
  if (process.env.MCP_TEST_LOG) appendFileSync(process.env.MCP_TEST_LOG, `${line} ${label} ${process.pid}\n`);
};

/** Variant "names"' tool of 70 characters: its exposed name is cut before "delete". */
const LONG_DELETE_TOOL = "repositories_bulk_archive_and_delete_every_branch_older_than_ninety_dd";

function buildServer(): McpServer {
  const server = new McpServer({ name: `dossier-test-${label}`, version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
  if (variant === "names") return registerNames(server);
  server.registerTool(
    "slow",
    { description: "Answers after `ms` milliseconds.", inputSchema: { ms: z.number().int().min(0), tag: z.string().optional() } },
    async ({ ms, tag }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: "text", text: `slow done after ${ms} ms (${label}, variant ${variant}${tag ? `, ${tag}` : ""})` }] };
    },
  );
  server.registerTool("echo", { description: "Echoes its text.", inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text: `${label}: ${text}` }],
  }));
  server.registerTool("fail", { description: "Always reports an error." }, async () => ({
    content: [{ type: "text", text: "this tool always fails" }],
    isError: true,
  }));
  // Registering a tool on a connected server sends notifications/tools/list_changed.
  server.registerTool("add_tool", { description: "Adds the tool `added`." }, async () => {
    server.registerTool("added", { description: "Added at run time." }, async () => ({ content: [{ type: "text", text: "added works" }] }));
    return { content: [{ type: "text", text: "added the tool `added`" }] };
  });
  if (variant !== "a" && variant !== "b") registerHuge(server);
  if (variant === "endless-list" || variant === "slow-list") {
    // Replaces the SDK's own handler: the tools it registered still answer calls.
    server.server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      if (variant === "slow-list") await new Promise((resolve) => setTimeout(resolve, 60_000));
      const page = Number(request.params?.cursor ?? 0);
      return {
        tools: [{ name: page === 0 ? "echo" : `page_${page}`, description: "A page of an endless list.", inputSchema: { type: "object" as const } }],
        nextCursor: String(page + 1),
      };
    });
  }
  if (variant === "b") {
    server.registerTool("fresh", { description: "Only in variant b." }, async () => ({ content: [{ type: "text", text: "fresh" }] }));
  }
  return server;
}

/** Variant "names": tools whose exposed names are cut or collide; each call is logged. */
function registerNames(server: McpServer): McpServer {
  const logged = (tool: string) => async () => {
    log(`call ${tool}`);
    return { content: [{ type: "text" as const, text: `${tool} done` }] };
  };
  const registered = [LONG_DELETE_TOOL, "delete.cache", "delete_cache"].map((tool) =>
    server.registerTool(tool, { description: `Runs ${tool}.` }, logged(tool)),
  );
  // Changing a tool's description sends notifications/tools/list_changed too.
  server.registerTool("redescribe", { description: "Gives the tool `delete_cache` another description." }, async () => {
    registered[2]!.update({ description: "Deletes every cache, and the backups with them." });
    return { content: [{ type: "text", text: "redescribed delete_cache" }] };
  });
  // Removing a tool from a connected server sends notifications/tools/list_changed.
  server.registerTool("forget_dotted", { description: "Removes the tool `delete.cache`." }, async () => {
    registered[1]!.remove();
    return { content: [{ type: "text", text: "removed delete.cache" }] };
  });
  return server;
}

/** The tool `huge` (variants other than "a" and "b"): answers `bytes` characters. */
function registerHuge(server: McpServer): void {
  server.registerTool(
    "huge",
    {
      description: "Answers `bytes` characters.",
      inputSchema: { bytes: z.number().int().min(0), error: z.boolean().optional(), stream: z.boolean().optional() },
    },
    async ({ bytes, error, stream }, extra) => {
      if (stream) return streamAnswer(extra.requestId, bytes, error === true);
      return { content: [{ type: "text", text: "e".repeat(bytes) }], isError: error === true };
    },
  );
}

/** Writes the JSON-RPC answer to `id` straight to stdout, piece by piece, waiting for the pipe; never returns. */
async function streamAnswer(id: string | number, bytes: number, isError: boolean): Promise<never> {
  const write = (text: string) => new Promise<void>((resolve) => (process.stdout.write(text) ? resolve() : process.stdout.once("drain", () => resolve())));
  await write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"isError":${isError},"content":[{"type":"text","text":"`);
  const piece = "e".repeat(1_048_576);
  for (let sent = 0; sent < bytes && process.stdout.writable; sent += piece.length) await write(piece.slice(0, Math.min(piece.length, bytes - sent)));
  await write(`"}]}}\n`);
  return new Promise<never>(() => undefined);
}

/** Answers a `huge` call over HTTP as one JSON body written piece by piece as the socket drains. */
async function streamHttpAnswer(res: import("node:http").ServerResponse, id: string | number, bytes: number): Promise<void> {
  res.writeHead(200, { "content-type": "application/json" });
  const write = (text: string) => new Promise<void>((resolve) => (res.write(text) ? resolve() : res.once("drain", () => resolve())));
  await write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`);
  const piece = "e".repeat(1_048_576);
  for (let sent = 0; sent < bytes && !res.destroyed; sent += piece.length) await write(piece.slice(0, Math.min(piece.length, bytes - sent)));
  res.end(`"}]}}`);
}

log("start");
process.on("exit", () => log("exit"));

if (argv.includes("--http")) {
  const http = createServer(async (req, res) => {
    // Stateless: a new server and transport per request.
    const server = buildServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close());
    await server.connect(transport);
    let body = "";
    for await (const chunk of req) body += chunk;
    const message = body ? JSON.parse(body) : undefined;
    if (message?.method === "tools/call" && message.params?.name === "huge" && message.params.arguments?.stream) {
      return streamHttpAnswer(res, message.id, message.params.arguments.bytes);
    }
    await transport.handleRequest(req, res, message);
  });
  http.listen(0, "127.0.0.1", () => {
    const address = http.address() as { port: number };
    process.stdout.write(`listening http://127.0.0.1:${address.port}/mcp\n`);
  });
} else {
  await buildServer().connect(new StdioServerTransport());
  process.stdin.on("end", () => process.exit(0));
}
