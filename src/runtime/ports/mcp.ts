// The MCP port: one live connection to one MCP server. The adapter over
// @modelcontextprotocol/sdk implements it (src/runtime/adapters/mcp-sdk-client.ts); the
// registry (src/runtime/mcp) decides when connections open and close.

/** What to connect to: a local program over stdio (no shell), or a streamable HTTP endpoint. */
export type McpEndpoint =
  | { transport: "STDIO"; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { transport: "HTTP"; url: string; headers: Record<string, string> };

/**
 * A tool as the server lists it; `inputSchema` is a JSON Schema object. `inputSchemaReplaced`:
 * why runs are offered it with an open input schema instead of the server's (absent when not).
 * `descriptionCut`: why its description is the first part of the server's (absent when whole).
 */
export type McpToolInfo = { name: string; description?: string; descriptionCut?: string; inputSchema: Record<string, unknown>; inputSchemaReplaced?: string };

/** A listed tool no run is offered: where the server listed it (0 for its first, across pages) and why. */
export type McpSkippedTool = { position: number; reason: string };

/** What a listing yields: the tools runs are offered, and those skipped. */
export type McpToolListing = { tools: McpToolInfo[]; skipped: McpSkippedTool[] };

export type McpCallResult = { text: string; isError: boolean };

export interface McpClient {
  listTools(): Promise<McpToolListing>;
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult>;
  close(): Promise<void>;
}

export type McpClientEvents = {
  /** The server sent `notifications/tools/list_changed`. */
  onToolsChanged(): void;
  /** The transport closed without being asked to (the process exited, the session ended). */
  onClosed(error?: Error): void;
};

/**
 * Opens a connection and completes the MCP initialisation; rejects when the server is unreachable.
 * `principalId`: whose server it is — an HTTP server is reached on that principal's connections.
 */
export type McpConnector = (endpoint: McpEndpoint, events: McpClientEvents, signal: AbortSignal, principalId: string) => Promise<McpClient>;

export type McpConnectionState = "CONNECTING" | "CONNECTED" | "FAILED" | "CLOSED";

export type McpServerStatus = {
  state: McpConnectionState | "DISABLED";
  error: string | null;
  tools: readonly McpToolInfo[];
  /** Tools the server listed that runs are not offered, with why. */
  skippedTools: readonly McpSkippedTool[];
  /** Connections this instance has opened to the server (a reconnect adds one). */
  connects: number;
  /** Replaced connections of this server still finishing their in-flight calls. */
  draining: number;
};

/** The live connection status of a principal's MCP servers on this instance, by server name. */
export interface McpStatusView {
  status(principalId: string): Promise<Map<string, McpServerStatus>>;
}
