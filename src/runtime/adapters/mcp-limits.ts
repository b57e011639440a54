// What a principal's MCP server may send: a message's size is capped while it is received (not
// after buffering it whole), and tool listing is bounded in pages, tools and time. A server is
// another principal's program or anyone's URL: its output is never trusted to be small or to end.
import type { McpToolInfo } from "../ports/mcp.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

export type McpLimits = {
  /** The most bytes one message from the server (a result, an error result, a page of tools) may take (MCP_RESULT_MAX_BYTES). */
  resultMaxBytes: number;
  /** The most pages of tools/list followed (MCP_LIST_MAX_PAGES). */
  listMaxPages: number;
  /** The most tools kept from one server (MCP_LIST_MAX_TOOLS). */
  listMaxTools: number;
  /** The longest a whole listing may take (MCP_LIST_TIMEOUT_MS). */
  listTimeoutMs: number;
};

export const DEFAULT_MCP_LIMITS: McpLimits = { resultMaxBytes: 10_485_760, listMaxPages: 50, listMaxTools: 1_000, listTimeoutMs: 30_000 };

/** A message the server sent was larger than the cap; it was dropped while being received. */
export class McpMessageTooLarge extends Error {
  override name = "McpMessageTooLarge";
  constructor(readonly maxBytes: number) {
    super(`the MCP server's answer is larger than ${groupedDigits(maxBytes)} bytes (MCP_RESULT_MAX_BYTES); it was refused`);
  }
}

/**
 * A fetch whose POST answers (each carries the answer to one request) stop with McpMessageTooLarge
 * once more than `maxBytes` have arrived, so an endless or huge body is never held in memory.
 * `onTooLarge` hears of it: a streamed (SSE) answer's error does not reach the request that waits.
 */
export function sizeCappedFetch(fetch: typeof globalThis.fetch, maxBytes: number, onTooLarge: (error: McpMessageTooLarge) => void): typeof globalThis.fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? "GET").toUpperCase() !== "POST" || !response.body) return response;
    let seen = 0;
    const capped = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen <= maxBytes) return controller.enqueue(chunk);
          const error = new McpMessageTooLarge(maxBytes);
          onTooLarge(error);
          controller.error(error);
        },
      }),
    );
    return new Response(capped, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** Whether an error the SDK's stdio transport reported is its read buffer overflowing (a line over the cap). */
export const isStdioOverflow = (error: unknown): boolean => error instanceof Error && /ReadBuffer exceeded maximum size/.test(error.message);

type Page = { tools: { name: string; description?: string; inputSchema: unknown }[]; nextCursor?: string };

/**
 * Every page of tools/list up to the limits: at most `listMaxPages` pages and `listMaxTools` tools,
 * within `listTimeoutMs` in all. A server that goes past the page or tool limit keeps the tools
 * listed so far; one that takes too long fails the listing.
 */
export async function listToolsBounded(
  listPage: (cursor: string | undefined, signal: AbortSignal) => Promise<Page>,
  limits: McpLimits,
): Promise<{ tools: McpToolInfo[]; truncated: boolean }> {
  const signal = AbortSignal.timeout(limits.listTimeoutMs);
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < limits.listMaxPages; page += 1) {
    const answer = await listPage(cursor, signal);
    for (const tool of answer.tools) {
      if (tools.length >= limits.listMaxTools) return { tools, truncated: true };
      tools.push({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as Record<string, unknown> });
    }
    cursor = answer.nextCursor;
    if (!cursor) return { tools, truncated: false };
  }
  return { tools, truncated: true };
}
