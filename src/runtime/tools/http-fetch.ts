// The http_fetch tool (R15): GET requests to an operator-chosen allow-list of hosts only (every
// redirect hop is checked too, and every connection's address: see src/outbound/outbound-http.ts),
// with a time limit over the whole exchange and a size limit on the body — a larger body is cut,
// and the model is told so. A failed connection is reported by its kind only.
import type { Logger } from "../../logger.js";
import { hostAllowed } from "../../domain/capabilities/outbound-policy.js";
import { connectionFailure, createOutboundHttp, InternalAddressError, type OutboundHttp, type Resolver } from "../../outbound/outbound-http.js";
import type { ToolSchema } from "../ports/model.js";
import { schemaPer } from "./schema-per.js";
import { type Tool, ToolError } from "../ports/tool.js";

export type FetchSettings = {
  /**
   * `example.com` (any port), `example.com:8443` (that port only), `*.example.org` (its
   * subdomains). Only hosts named exactly may resolve to addresses inside the network.
   */
  allowedHosts: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  /** Resolves a host name to its addresses (tests replace it). */
  resolve?: Resolver;
  /**
   * The connections every run's calls share (createHttpFetchClient), made once per process and
   * closed at its stop; a tool made without one has its own.
   */
  client?: OutboundHttp;
};

/** How long an idle socket to a fetched host is kept for reuse, whatever Keep-Alive the host asks for. */
export const FETCH_KEEP_ALIVE_MAX_MS = 4_000;
/**
 * The most sockets one principal's runs open to one origin at once; further calls wait for one
 * within their time limit. Each principal's calls go over connections of its own (their names are
 * looked up as that principal's: outbound-http.ts), and a popular source (an encyclopedia, a code
 * host) is fetched by many of its runs at once: room enough for them, few enough that no principal
 * can open sockets without bound.
 */
export const FETCH_CONNECTIONS_PER_ORIGIN = 32;

/** http_fetch's connections: each still checked as it opens (outbound-http.ts), few, and closed soon after use. */
export function createHttpFetchClient(settings: Pick<FetchSettings, "allowedHosts" | "resolve">, logger?: Logger): OutboundHttp {
  return createOutboundHttp({
    logger,
    allowedHosts: settings.allowedHosts,
    setting: "FETCH_ALLOWED_HOSTS",
    resolve: settings.resolve,
    keepAliveMaxMs: FETCH_KEEP_ALIVE_MAX_MS,
    connectionsPerOrigin: FETCH_CONNECTIONS_PER_ORIGIN,
  });
}

const MAX_REDIRECTS = 5;
const TEXTUAL = /^(text\/|application\/(json|xml|xhtml\+xml|javascript|ld\+json|rss\+xml|atom\+xml)|[^;]*\+json|[^;]*\+xml)/i;

function parseTarget(raw: unknown, allowedHosts: readonly string[]): URL {
  if (typeof raw !== "string" || !URL.canParse(raw)) throw new ToolError("url must be an absolute http:// or https:// URL");
  const url = new URL(raw);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ToolError("url must use http or https");
  if (url.username || url.password) throw new ToolError("url must not contain credentials");
  if (!hostAllowed(url, allowedHosts)) {
    throw new ToolError(`${url.host} is not on this server's fetch allow-list (allowed: ${allowedHosts.join(", ")}).`);
  }
  return url;
}

/** Reads at most `maxBytes` of the body, then stops reading (the rest is never downloaded). */
async function readCapped(response: Response, maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  const reader = response.body?.getReader();
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = maxBytes - size;
    if (value.byteLength > room) {
      chunks.push(value.subarray(0, room));
      size += room;
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return { bytes: Buffer.concat(chunks, size), truncated };
}

/** One schema per settings (the server's): see schema-per.ts. */
const schemaFor = schemaPer(
  (settings: FetchSettings): ToolSchema => ({
    name: "http_fetch",
    description: `Fetches a web page or API response with GET. Only these hosts are reachable: ${settings.allowedHosts.join(", ")}. Bodies over ${settings.maxBytes} bytes are cut.`,
    parameters: {
      type: "object",
      properties: { url: { type: "string", description: "An absolute http(s) URL on an allowed host." } },
      required: ["url"],
    },
  }),
);

export function createHttpFetchTool(settings: FetchSettings): Tool {
  const outbound = settings.client ?? createHttpFetchClient(settings);
  return {
    schema: schemaFor(settings),
    // The tool's own limit comes first, so the model reads a precise message.
    timeoutMs: settings.timeoutMs + 1_000,
    async execute(args, context) {
      let url = parseTarget((args as { url?: unknown })?.url, settings.allowedHosts);
      const timeout = AbortSignal.timeout(settings.timeoutMs);
      const signal = AbortSignal.any([context.signal, timeout]);
      const fetchAsOwner = outbound.fetchFor(context.run.ownerId);
      try {
        for (let hop = 0; ; hop += 1) {
          const response = await fetchAsOwner(url, { redirect: "manual", signal, headers: { accept: "text/*, application/json;q=0.9, */*;q=0.5" } });
          const location = response.headers.get("location");
          if (response.status >= 300 && response.status < 400 && location) {
            await response.body?.cancel().catch(() => undefined);
            if (hop >= MAX_REDIRECTS) throw new ToolError(`more than ${MAX_REDIRECTS} redirects`);
            url = parseTarget(new URL(location, url).href, settings.allowedHosts);
            continue;
          }
          return await describe(url, response, settings.maxBytes);
        }
      } catch (error) {
        if (timeout.aborted && !context.signal.aborted) throw new ToolError(`fetching ${url.href} timed out after ${settings.timeoutMs} ms`);
        if (error instanceof ToolError || context.signal.aborted) throw error;
        if (error instanceof InternalAddressError) throw new ToolError(`fetching ${url.href} was refused: ${error.message}`);
        throw new ToolError(`fetching ${url.href} failed: ${connectionFailure(error)}`);
      }
    },
  };
}

async function describe(url: URL, response: Response, maxBytes: number): Promise<string> {
  const type = response.headers.get("content-type") ?? "";
  const head = `HTTP ${response.status} ${response.statusText}\nurl: ${url.href}\ncontent-type: ${type || "unknown"}\n\n`;
  if (type && !TEXTUAL.test(type)) {
    await response.body?.cancel().catch(() => undefined);
    return `${head}[${type} content is not shown: only text is returned]`;
  }
  const { bytes, truncated } = await readCapped(response, maxBytes);
  const text = new TextDecoder("utf-8").decode(bytes);
  return `${head}${text}${truncated ? `\n[truncated: the body is larger than ${maxBytes} bytes; only the first ${maxBytes} are shown]` : ""}`;
}
