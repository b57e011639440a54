// The Dossier MCP server as another agent starts it (`npm run mcp`: the bundle in dist/, with
// Dossier's Node.js flags), connected over stdio with the MCP SDK's client.
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { NODE_FLAGS } from "../../scripts/build.mjs";
import { projectRoot } from "./processes.js";

export type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };

export async function connectMcp(env: Record<string, string>) {
  const transport = new StdioClientTransport({
    // As `npm run mcp` runs it: the bundle in dist/, with Dossier's Node.js flags.
    command: process.execPath,
    args: [...NODE_FLAGS, path.join(projectRoot, "dist/src/mcp/main.js")],
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stderr: "pipe",
  });
  const client = new Client({ name: "dossier-test-agent", version: "1.0.0" });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolResult;
  return {
    client,
    call,
    /** The text of the tool's answer, error or not. */
    text: async (name: string, args: Record<string, unknown> = {}) => (await call(name, args)).content[0]!.text,
    /** The tool's JSON answer; fails the test when the tool reported an error. */
    async json(name: string, args: Record<string, unknown> = {}) {
      const result = await call(name, args);
      if (result.isError) throw new Error(`${name} failed: ${result.content[0]?.text}`);
      return JSON.parse(result.content[0]!.text);
    },
  };
}
