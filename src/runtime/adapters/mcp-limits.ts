// What a principal's MCP server may send: a message's size is capped while it is received (not
// after buffering it whole), and tool listing is bounded in pages, tools and time. A server is
// another principal's program or anyone's URL: its output is never trusted to be small or to end.
import type { McpToolListing } from "../ports/mcp.js";
import { ToolError } from "../ports/tool.js";
import { LISTING_MAX_CHARS, readListedTool } from "./mcp-listed-tools.js";
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

/**
 * A message the server sent was larger than the cap; it was dropped while being received. Dossier's
 * own words, with nothing of the server's: a call's model reads them as they are.
 */
export class McpMessageTooLarge extends ToolError {
  override name = "McpMessageTooLarge";
  constructor(readonly maxBytes: number) {
    super(`the MCP server's answer is larger than ${groupedDigits(maxBytes)} bytes (MCP_RESULT_MAX_BYTES); it was refused`);
  }
}

/**
 * A fetch whose answers stop with McpMessageTooLarge once one message from the server takes more
 * than `maxBytes`, so an endless or huge message is never held in memory. A POST answered with
 * JSON carries one message: its whole body counts. An event stream (the GET stream the server
 * speaks on unasked, or a POST answered with events) carries many: the bytes since the last event
 * boundary (a blank line) count. The stream is cancelled at the excess, which releases the
 * connection. `onTooLarge` hears of it with the request's method: an error inside a stream reaches
 * no request that waits.
 */
export function sizeCappedFetch(
  fetch: typeof globalThis.fetch,
  maxBytes: number,
  onTooLarge: (error: McpMessageTooLarge, method: string) => void,
): typeof globalThis.fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    const method = (init?.method ?? "GET").toUpperCase();
    const perEvent = method !== "POST" || isEventStream(response.headers.get("content-type"));
    const overCap = perEvent ? eventOverCap(maxBytes) : bodyOverCap(maxBytes);
    const capped = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (!overCap(chunk)) return controller.enqueue(chunk);
          const error = new McpMessageTooLarge(maxBytes);
          controller.error(error);
          onTooLarge(error, method);
        },
      }),
    );
    return new Response(capped, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

const isEventStream = (contentType: string | null): boolean => (contentType ?? "").split(";")[0]!.trim().toLowerCase() === "text/event-stream";

const LF = 0x0a;
const CR = 0x0d;

/** Whether a body, read chunk by chunk, has gone past `maxBytes`. */
function bodyOverCap(maxBytes: number): (chunk: Uint8Array) => boolean {
  let seen = 0;
  return (chunk) => (seen += chunk.byteLength) > maxBytes;
}

/**
 * Whether an event of an event stream, read chunk by chunk, has gone past `maxBytes`: the bytes
 * since the last event boundary count. An event ends at an empty line, a line at CRLF, LF or CR
 * (the SSE grammar), wherever the chunks split them.
 */
function eventOverCap(maxBytes: number): (chunk: Uint8Array) => boolean {
  let sinceBoundary = 0;
  let atLineStart = true;
  let afterCr = false;
  return (chunk) => {
    for (const byte of chunk) {
      if ((sinceBoundary += 1) > maxBytes) return true;
      // The LF of a CRLF: its line ended at the CR.
      if (byte === LF && afterCr) {
        afterCr = false;
        continue;
      }
      afterCr = byte === CR;
      if (byte !== LF && byte !== CR) {
        atLineStart = false;
        continue;
      }
      if (atLineStart) sinceBoundary = 0;
      atLineStart = true;
    }
    return false;
  };
}

/** Whether an error the SDK's stdio transport reported is its read buffer overflowing (a line over the cap). */
export const isStdioOverflow = (error: unknown): boolean => error instanceof Error && /ReadBuffer exceeded maximum size/.test(error.message);

const pastListingBound = (chars: number, kept: number): string =>
  `it takes ${groupedDigits(chars)} characters, and the tools kept before it ${groupedDigits(kept)}: a listing keeps at most ${groupedDigits(LISTING_MAX_CHARS)}`;

type Page = { tools?: unknown[]; nextCursor?: unknown };

/**
 * Every page of tools/list up to the limits: at most `listMaxPages` pages and `listMaxTools` entries
 * (tools kept and entries skipped alike),
 * within `listTimeoutMs` in all. A server that goes past the page or tool limit keeps the tools
 * listed so far; one that takes too long fails the listing. Each tool is read on its own
 * (mcp-listed-tools.ts): one the runs cannot use is skipped, with its reason, and the rest kept.
 * The tools kept take at most LISTING_MAX_CHARS characters in all (names, descriptions, input
 * schemas as JSON): a tool that would go past it is skipped, with why, and later ones that fit are
 * kept. A listing is held by every worker and API instance the server's owner uses, and listed
 * again whenever the server says its tools changed.
 */
export async function listToolsBounded(
  listPage: (cursor: string | undefined, signal: AbortSignal) => Promise<Page>,
  limits: McpLimits,
): Promise<McpToolListing & { truncated: boolean }> {
  const signal = AbortSignal.timeout(limits.listTimeoutMs);
  const listing: McpToolListing = { tools: [], skipped: [] };
  let position = 0;
  let kept = 0;
  let cursor: string | undefined;
  for (let page = 0; page < limits.listMaxPages; page += 1) {
    const answer = await listPage(cursor, signal);
    for (const raw of answer.tools ?? []) {
      // Every entry counts, kept or skipped: a page of junk holds no more than a page of tools.
      if (position >= limits.listMaxTools) return { ...listing, truncated: true };
      const read = readListedTool(raw, position++);
      if ("skipped" in read) listing.skipped.push(read.skipped);
      else if (kept + read.chars > LISTING_MAX_CHARS) listing.skipped.push({ position: position - 1, reason: pastListingBound(read.chars, kept) });
      else {
        kept += read.chars;
        listing.tools.push(read.tool);
      }
    }
    cursor = typeof answer.nextCursor === "string" && answer.nextCursor !== "" ? answer.nextCursor : undefined;
    if (!cursor) return { ...listing, truncated: false };
  }
  return { ...listing, truncated: true };
}
