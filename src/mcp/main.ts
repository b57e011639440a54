// Entry point of `npm run -s mcp`: the Dossier MCP server over stdio. stdout carries the MCP
// protocol only; anything for a human goes to stderr.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createClient } from "../../sdk/index.js";
import { ConfigError, loadMcpClientConfig } from "../config.js";
import { createDossierMcpServer } from "./dossier-mcp-server.js";

async function main(): Promise<void> {
  const config = loadMcpClientConfig();
  const client = createClient({
    url: config.url,
    headers: config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {},
    // Every operation by its documentId: a Dossier server accepts those whether or not it runs
    // only trusted documents (TRUSTED_DOCUMENTS_ONLY=true), and the MCP server's are the SDK's.
    trustedDocuments: true,
  });
  const server = createDossierMcpServer({ client });
  const transport = new StdioServerTransport();
  const shutdown = async () => {
    await server.close();
    await client.close();
    process.exit(0);
  };
  // The MCP client ends the session by closing our stdin (or with a signal).
  process.stdin.once("end", () => void shutdown());
  process.once("SIGINT", () => void shutdown());
  process.once("SIGTERM", () => void shutdown());
  await server.connect(transport);
  process.stderr.write(`Dossier MCP server ready (stdio), talking to ${config.url}${config.apiKey ? " with an API key" : " without an API key"}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `The Dossier MCP server could not start.\n${error instanceof ConfigError ? error.message : error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
