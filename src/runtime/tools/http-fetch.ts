// The http_fetch tool (R15): GET requests to an operator-chosen allow-list of hosts only (every
// redirect hop is checked too), with a time limit over the whole exchange and a size limit on
// the body — a larger body is cut, and the model is told so.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { type Tool, ToolError } from "../ports/tool.js";

export type FetchSettings = {
  /** `example.com` (any port), `example.com:8443` (that port only), `*.example.org` (its subdomains). */
  allowedHosts: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  /** Resolves a host name to its addresses (tests replace it). */
  resolve?: (host: string) => Promise<string[]>;
};

const resolveHost = async (host: string) => (await lookup(host, { all: true })).map((entry) => entry.address);

/** Loopback, private, link-local (cloud metadata), carrier-grade NAT and unspecified addresses. */
export function isInternalAddress(address: string): boolean {
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.\d+\.\d+$/i.exec(address);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
  }
  const v6 = address.toLowerCase();
  return v6 === "::" || v6 === "::1" || /^f[cd]/.test(v6) || /^fe[89ab]/.test(v6);
}

/**
 * A host matched only by a wildcard entry must not lead inside the network: `*.example.org`
 * allows the subdomains someone outside controls, and one of them may resolve to 127.0.0.1 or a
 * metadata address. A host the operator named exactly, or an address literal, is theirs to allow.
 */
async function assertNotInternal(url: URL, allowedHosts: readonly string[], resolve: (host: string) => Promise<string[]>): Promise<void> {
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (isIP(host) || allowedHosts.some((entry) => entry.toLowerCase().split(":")[0] === host)) return;
  const internal = (await resolve(host)).find(isInternalAddress);
  if (internal) throw new ToolError(`${url.hostname} resolves to an internal address (${internal}); only hosts named exactly on the allow-list may do that.`);
}

const MAX_REDIRECTS = 5;
const TEXTUAL = /^(text\/|application\/(json|xml|xhtml\+xml|javascript|ld\+json|rss\+xml|atom\+xml)|[^;]*\+json|[^;]*\+xml)/i;

export function hostAllowed(url: URL, allowedHosts: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return allowedHosts.some((entry) => {
    const [pattern, entryPort] = entry.toLowerCase().split(":") as [string, string | undefined];
    if (entryPort !== undefined && entryPort !== port) return false;
    return pattern.startsWith("*.") ? host.endsWith(pattern.slice(1)) : host === pattern;
  });
}

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

export function createHttpFetchTool(settings: FetchSettings): Tool {
  return {
    schema: {
      name: "http_fetch",
      description: `Fetches a web page or API response with GET. Only these hosts are reachable: ${settings.allowedHosts.join(", ")}. Bodies over ${settings.maxBytes} bytes are cut.`,
      parameters: {
        type: "object",
        properties: { url: { type: "string", description: "An absolute http(s) URL on an allowed host." } },
        required: ["url"],
      },
    },
    // The tool's own limit comes first, so the model reads a precise message.
    timeoutMs: settings.timeoutMs + 1_000,
    async execute(args, context) {
      let url = parseTarget((args as { url?: unknown })?.url, settings.allowedHosts);
      const timeout = AbortSignal.timeout(settings.timeoutMs);
      const signal = AbortSignal.any([context.signal, timeout]);
      try {
        for (let hop = 0; ; hop += 1) {
          await assertNotInternal(url, settings.allowedHosts, settings.resolve ?? resolveHost);
          const response = await fetch(url, { redirect: "manual", signal, headers: { accept: "text/*, application/json;q=0.9, */*;q=0.5" } });
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
        throw new ToolError(`fetching ${url.href} failed: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
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
