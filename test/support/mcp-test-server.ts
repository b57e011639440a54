// A real MCP server for tests, written with the same SDK Dossier's client uses. Over stdio by
// default; `--http` serves streamable HTTP on a free port and prints `listening <url>`.
//   --name <label>     shows in results and in the start/exit log
//   --variant <v>      "a": tools slow, echo; "b": adds fresh — a configuration change that
//                      yields a different tool set
//   MCP_TEST_LOG=file  appends "start <label> <pid>" and "exit <label> <pid>" lines
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
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

function buildServer(): McpServer {
  const server = new McpServer({ name: `dossier-test-${label}`, version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
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
  if (variant === "b") {
    server.registerTool("fresh", { description: "Only in variant b." }, async () => ({ content: [{ type: "text", text: "fresh" }] }));
  }
  return server;
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
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  http.listen(0, "127.0.0.1", () => {
    const address = http.address() as { port: number };
    process.stdout.write(`listening http://127.0.0.1:${address.port}/mcp\n`);
  });
} else {
  await buildServer().connect(new StdioServerTransport());
  process.stdin.on("end", () => process.exit(0));
}
