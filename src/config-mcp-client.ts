// Settings of `npm run mcp`, the MCP server that is a client of a running Dossier server: a
// separate program with settings of its own, read like every other setting (config.ts).
import { z } from "zod";
import { parseEnv } from "./config-rules.js";

const mcpClientSchema = z.object({
  /** The Dossier GraphQL endpoint the MCP server talks to. */
  DOSSIER_URL: z.url({ protocol: /^https?$/, error: "must be an http(s) URL such as http://localhost:4000/graphql" }).default("http://localhost:4000/graphql"),
  /** The API key whose principal the MCP tools act for (optional when the server does not require keys). */
  DOSSIER_API_KEY: z.string().min(1).optional(),
});

export type McpClientConfig = { url: string; apiKey?: string };

/** Parses `npm run mcp`'s environment (config.ts hands it the process's environment); throws ConfigError listing every bad value. */
export function parseMcpClientConfig(env: Record<string, string | undefined>): McpClientConfig {
  const { values } = parseEnv(mcpClientSchema, env);
  return { url: values.DOSSIER_URL, apiKey: values.DOSSIER_API_KEY };
}
