// What the model reads when a call of an MCP tool fails on the way, not in the server's own tool
// result: the connection closed or failed, or the server answered with a JSON-RPC error instead
// of a result. Such an error's text comes from the transport or from the server's internals — host
// names, URLs that carry tokens, stack text — so the model is told only which tool failed and how;
// the server's log has the error, its URLs redacted. A tool result with isError is the server's
// answer and reaches the model as written (a ToolError, mcp-tools.ts), as do Dossier's own refusals.
import type { Logger } from "../../logger.js";
import { redactUrlsIn } from "../../domain/sealed-url.js";

/** The JSON-RPC code the MCP SDK gives a request whose connection closed before its answer. */
const CONNECTION_CLOSED = -32000;

type Failure = { tool: string; server: string; runId: string; toolCallId: string };

const codeOf = (error: unknown): number | undefined => {
  const code = error instanceof Error && error.name === "McpError" ? (error as { code?: unknown }).code : undefined;
  return typeof code === "number" ? code : undefined;
};

/** How the call failed, in words that hold nothing of the error's own text. */
function kindOf(error: unknown, server: string): string {
  const code = codeOf(error);
  if (code === CONNECTION_CLOSED && error instanceof Error && /Connection closed$/.test(error.message))
    return `the connection to the MCP server "${server}" closed before it answered`;
  if (code !== undefined) return `the MCP server "${server}" answered with a protocol error (JSON-RPC code ${code}) instead of a result`;
  return `the connection to the MCP server "${server}" failed`;
}

/** The error in full for the log, its cause included, every URL in it redacted. */
function logged(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  const cause =
    error instanceof Error && error.cause !== undefined
      ? `\ncaused by: ${error.cause instanceof Error ? (error.cause.stack ?? error.cause.message) : String(error.cause)}`
      : "";
  return redactUrlsIn(`${text}${cause}`);
}

/** Logs a failed MCP call and answers what the model reads of it. */
export function mcpCallFailure(failure: Failure, error: unknown, logger?: Logger): string {
  const code = codeOf(error);
  logger?.warn("an MCP tool call failed", { ...failure, ...(code !== undefined && { code }), error: logged(error) });
  return `${failure.tool} failed: ${kindOf(error, failure.server)}; the server's log has the details. Try again later, or go on without this call.`;
}
