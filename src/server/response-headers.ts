// What every response the GraphQL server answers says to browsers and caches on its way:
// - Cache-Control: no-store. A GraphQL answer is one principal's data, and GraphiQL's page carries
//   this process's own secret header value (server/graphiql.ts): neither may be kept by a shared
//   cache, nor by the browser's. Only a response that says it is the same for everyone
//   (`public`: the icon) keeps its own; an SSE stream's `no-cache` becomes `no-store`.
// - Vary: Origin. Whether a response carries CORS headers depends on the page's origin
//   (server/cross-site.ts: a listed one is named back, any other gets none), so a cache must not
//   hand one origin's answer to another.
// - X-Content-Type-Options: nosniff. A browser takes each response for its declared type only: a
//   JSON answer that echoes what a request sent is never run as a script or shown as a page.
// Yoga's answers get them from its plugin (privateResponses); every response the HTTP server writes
// itself — a refused name's 421, another site's 403, a wrong path's 404, a forwarded client's 429
// (withPrivateHeaders), a refused WebSocket upgrade (PRIVATE_HEADERS passed to ws), the 400 or
// 405 ws answers itself to a malformed upgrade or one at another path (privateUpgradeRefusals),
// and the 400, 408 or 431 of a request that never arrived whole (answerClientErrors) — gets the
// same ones here.
import type { IncomingMessage, RequestListener, Server } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { Plugin } from "graphql-yoga";

/** The headers every response carries, unless it says it is the same for everyone (Cache-Control: public). */
export const PRIVATE_HEADERS: Readonly<Record<string, string>> = { "cache-control": "no-store", vary: "Origin", "x-content-type-options": "nosniff" };

export function privateResponses(): Plugin {
  return {
    onResponse({ response }) {
      const { headers } = response;
      if (!/\bpublic\b/i.test(headers.get("cache-control") ?? "")) {
        // Deleted first: a header the response was made with under another spelling ("Cache-Control")
        // would otherwise be sent beside the one set here.
        headers.delete("cache-control");
        headers.set("cache-control", PRIVATE_HEADERS["cache-control"]!);
      }
      const vary = headers.get("vary");
      if (vary === null || vary.trim() === "") headers.set("vary", "Origin");
      else if (vary.trim() !== "*" && !vary.split(",").some((name) => name.trim().toLowerCase() === "origin")) headers.set("vary", `${vary}, Origin`);
      headers.set("x-content-type-options", PRIVATE_HEADERS["x-content-type-options"]!);
    },
  };
}

/**
 * The HTTP handler, with PRIVATE_HEADERS set on each response before anything writes it: what the
 * server answers outside Yoga carries them, and a header a response names itself (Yoga's, the
 * icon's Cache-Control) takes their place.
 */
export function withPrivateHeaders(handler: RequestListener): RequestListener {
  return (request, response) => {
    for (const [name, value] of Object.entries(PRIVATE_HEADERS)) response.setHeader(name, value);
    return handler(request, response);
  };
}

/** The status Node answers a request that could not be read with (its own choice, kept). */
const CLIENT_ERROR_STATUS: Readonly<Record<string, number>> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/**
 * Answers a request Node could not read (malformed, headers too large, not arrived in time) as
 * Node would — 400, 408, 431 or 413, then the connection closed — with PRIVATE_HEADERS besides.
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { _headerSent?: boolean } | null }) => {
    // Nothing is written into a response already under way, nor to a peer that has gone.
    if (socket.writable && !socket._httpMessage?._headerSent) {
      const status = CLIENT_ERROR_STATUS[error.code ?? ""] ?? 400;
      const headers = Object.entries({ ...PRIVATE_HEADERS, connection: "close" }).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${headers.join("")}\r\n`);
    }
    socket.destroy(error);
  });
}

/**
 * Gives what ws writes itself on an upgrade's socket it refuses — 405 to another method, 400 to a
 * malformed upgrade or one at another path than the endpoint's, 503 while it closes — PRIVATE_HEADERS
 * besides its own (one it names already is kept). ws ends such a socket with the whole response in
 * one piece; the 101 of an accepted upgrade is written, not ended with, and is left as it is.
 */
export function privateUpgradeRefusals(server: Server): void {
  server.prependListener("upgrade", (_request: IncomingMessage, socket: Duplex) => {
    const end = socket.end;
    socket.end = function (this: Duplex, ...args: unknown[]) {
      socket.end = end;
      if (typeof args[0] === "string") args[0] = withPrivateHead(args[0]);
      return (end as (...args: unknown[]) => Duplex).apply(this, args);
    } as Duplex["end"];
  });
}

/** A raw HTTP response with PRIVATE_HEADERS it does not name yet, after its status line; anything else as it is. */
function withPrivateHead(response: string): string {
  const headEnd = response.indexOf("\r\n\r\n");
  const lineEnd = response.indexOf("\r\n");
  if (!response.startsWith("HTTP/1.1 ") || headEnd < 0) return response;
  const named = new Set(
    response
      .slice(lineEnd + 2, headEnd)
      .split("\r\n")
      .map((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase()),
  );
  const added = Object.entries(PRIVATE_HEADERS).filter(([name]) => !named.has(name));
  return `${response.slice(0, lineEnd)}${added.map(([name, value]) => `\r\n${name}: ${value}`).join("")}${response.slice(lineEnd)}`;
}
