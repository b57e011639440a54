// Settings of the MCP server (npm run mcp). It is a separate program — a client of a running
// Dossier server — so it has its own small schema instead of the server's src/config.ts.
import { z } from "zod";

const mcpEnvSchema = z.object({
  /** The Dossier GraphQL endpoint to talk to. */
  DOSSIER_URL: z.url({ protocol: /^https?$/, error: "DOSSIER_URL must be an http(s) URL such as http://localhost:4000/graphql" })
    .default("http://localhost:4000/graphql"),
  /** The API key whose principal the MCP tools act for (optional when the server does not require keys). */
  DOSSIER_API_KEY: z.string().min(1).optional(),
});

export type McpConfig = { url: string; apiKey?: string };

export class McpConfigError extends Error {
  override name = "McpConfigError";
}

export function loadMcpConfig(env: Record<string, string | undefined>): McpConfig {
  const parsed = mcpEnvSchema.safeParse({
    DOSSIER_URL: env.DOSSIER_URL || undefined,
    DOSSIER_API_KEY: env.DOSSIER_API_KEY || undefined,
  });
  if (!parsed.success) {
    throw new McpConfigError(parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("\n"));
  }
  return { url: parsed.data.DOSSIER_URL, apiKey: parsed.data.DOSSIER_API_KEY };
}
