// No cross-site requests. A browser sends a form, multipart or text/plain POST to any address
// without asking first, with whatever credentials it holds for it; a JSON POST it sends only after
// a preflight the server must approve. So the GraphQL endpoint executes POSTs only when they are
// JSON (anything else is 415 and executes nothing), Yoga executes no mutation over GET, and no
// origin is approved unless the operator listed it (CORS_ORIGINS): a page on another origin can
// neither change nor read anything. Nor can it start anything: a request to the endpoint from a
// page whose origin the WebSocket rule below refuses (a GET, an EventSource's SSE stream, a POST)
// is answered 403 before Yoga reads it, so no other site's page runs a query or holds a
// subscription of the keyless development principal's share. WebSocket upgrades, which browsers
// send from any page, are held to the same rule; a client that sends no Origin and no
// Sec-Fetch-Site naming another site is not a browser page — except a GET: on plain http under a
// name that is not loopback's, a browser sends neither for an <img>, a frame or a <link> of another
// site's page. So where a request without a credential acts as the development principal, a GET
// without them and without a credential must show it is a GraphQL client's: an Accept naming a
// GraphQL answer or an event stream, or a header only a script could add (bareGetAllowed); no
// page's element sends either.
// All of this holds at the endpoint's one path: Yoga would run GraphQL for any URL ending in it
// (/graphql/, /x/graphql, /?/graphql, //graphql), so every other spelling is 404 before Yoga
// reads it (guardPages), and Yoga itself parses no GraphQL request at another path (jsonPostsOnly).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Plugin } from "graphql-yoga";
import { originHostAllowed } from "./allowed-hosts.js";

const JSON_MEDIA_TYPES = new Set(["application/json", "application/graphql-response+json"]);

/**
 * Refuses (415) every POST to the GraphQL endpoint that is not JSON, before Yoga reads its body;
 * and (404) every GraphQL request Yoga took at another path, whatever route led it there.
 */
export function jsonPostsOnly(graphqlEndpoint: string): Plugin {
  return {
    onRequestParse({ url, endResponse, fetchAPI }) {
      if (url.pathname !== graphqlEndpoint) endResponse(new fetchAPI.Response(null, { status: 404, headers: { connection: "close" } }));
    },
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (request.method !== "POST" || url.pathname !== graphqlEndpoint) return;
      const mediaType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (JSON_MEDIA_TYPES.has(mediaType)) return;
      const message = `GraphQL requests must be sent as application/json, not ${mediaType || "without a content type"}`;
      endResponse(
        new fetchAPI.Response(JSON.stringify({ errors: [{ message, extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } }] }), {
          status: 415,
          headers: { "content-type": "application/json; charset=utf-8" },
        }),
      );
    },
  };
}

/** Yoga's CORS setting: only a listed origin is approved (with credentials); no header otherwise. */
export function corsFor(origins: readonly string[]) {
  return (request: Request) => {
    const origin = request.headers.get("origin");
    return origin !== null && origins.includes(origin) ? { origin: [origin], credentials: true } : false;
  };
}

/**
 * Whether a WebSocket upgrade may proceed: not from a browser page, from a listed origin
 * (CORS_ORIGINS), or from a page of this server itself — its Origin names the host the upgrade
 * was sent to, and that host is one of the listed names (ALLOWED_HOSTS), so a page whose name was
 * re-pointed here (DNS rebinding) never qualifies; or from an origin listed with its port in
 * ALLOWED_HOSTS. A page on another port of a name listed without one (the loopback names of the
 * embedded default) is another origin: it is refused like any other site. Only where every name is served (no list:
 * a non-loopback bind with keys required) is the page's own Host the whole measure.
 */
export function upgradeAllowed(request: IncomingMessage, origins: readonly string[], allowedHosts: readonly string[] | undefined): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  if (origins.includes(origin)) return true;
  if (allowedHosts !== undefined && !originHostAllowed(origin, allowedHosts)) return false;
  // An entry the operator listed with its port names one origin exactly: its pages are trusted.
  if (
    allowedHosts !== undefined &&
    originHostAllowed(
      origin,
      allowedHosts.filter((entry) => /:\d+$/.test(entry)),
    )
  )
    return true;
  return sameOrigin(origin, request.headers.host);
}

/**
 * Whether a page's Origin is this server's own, as the request's Host names it: the same name, and
 * the same port when the Host has one. A Host without a port matches a page on any port of its
 * name (a reverse proxy's `Host $host` drops the port its clients used), except on a loopback
 * name: there, other programs of the same machine serve pages on other ports, so a Host of
 * "localhost" (a server on port 80) means port 80 (443 for an https page).
 */
function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    const page = new URL(origin);
    const asked = new URL(`${page.protocol}//${host ?? ""}`);
    if (page.hostname !== asked.hostname) return false;
    const portless = asked.port === "" && !/:\d+$/.test(host ?? "");
    if (portless && !isLoopbackName(asked.hostname)) return true;
    return page.port === asked.port;
  } catch {
    return false;
  }
}

const isLoopbackName = (name: string) => name === "localhost" || name.endsWith(".localhost") || name === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(name);

export const CROSS_SITE_MESSAGE = "Requests from another site's page are refused (its origin is not this server's, nor listed in CORS_ORIGINS).";

/**
 * Whether a browser page may send this request to the GraphQL endpoint: its Origin passes the
 * WebSocket rule; without one (a GET from an <img>, a <script> or a frame sends none), its
 * Sec-Fetch-Site must not name another site — unless it is the user following a link to the page
 * (a top-level navigation: no other page reads its answer, and GraphiQL opens so).
 */
export function pageRequestAllowed(request: IncomingMessage, origins: readonly string[], allowedHosts: readonly string[] | undefined): boolean {
  if (request.headers.origin !== undefined) return upgradeAllowed(request, origins, allowedHosts);
  const site = request.headers["sec-fetch-site"];
  if (site !== "cross-site" && site !== "same-site") return true;
  return request.method === "GET" && request.headers["sec-fetch-mode"] === "navigate" && request.headers["sec-fetch-dest"] === "document";
}

/** The media types a GET may name in its Accept to show it is a GraphQL client's. */
const GRAPHQL_ANSWERS = new Set([...JSON_MEDIA_TYPES, "text/event-stream"]);
/** Headers a GraphQL client may send instead (Apollo's CSRF prevention reads them); a page's element sends neither. */
const CLIENT_HEADERS = ["apollo-require-preflight", "x-apollo-operation-name"];

export const BARE_GET_MESSAGE =
  "A GET without Origin, Sec-Fetch-Site or a credential must say it is a GraphQL client's: send `Accept: application/graphql-response+json` (or application/json, or text/event-stream for a subscription), or an `Apollo-Require-Preflight` header.";

/**
 * Whether a GET carrying neither Origin nor Sec-Fetch-Site nor a credential (which another site's
 * <img>, frame or <link> sends so on plain http) may reach Yoga: its Accept names a GraphQL answer
 * (not only a wildcard), or it carries a header of CLIENT_HEADERS; or it asks for GraphiQL's page
 * (text/html), which runs nothing by itself, where GraphiQL is served.
 */
export function bareGetAllowed(request: IncomingMessage, graphiql: boolean): boolean {
  const { headers } = request;
  if (request.method !== "GET" || headers.origin !== undefined || headers["sec-fetch-site"] !== undefined || headers.authorization !== undefined) return true;
  const accepted = (headers.accept ?? "").split(",").map((range) => range.split(";")[0]!.trim().toLowerCase());
  if (accepted.some((type) => GRAPHQL_ANSWERS.has(type)) || CLIENT_HEADERS.some((name) => headers[name] !== undefined)) return true;
  // Yoga renders GraphiQL for every GET that accepts text/html, and executes nothing then.
  return graphiql && accepted.includes("text/html");
}

/**
 * The HTTP handler, answering 403 to every request to `endpoint` that `pageRequestAllowed` or
 * `bareGetAllowed` refuses, and 404 to every request at another path that Yoga would take for `endpoint`.
 */
export function guardPages(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  endpoint: string,
  origins: readonly string[],
  allowedHosts: readonly string[] | undefined,
  /**
   * `keyless`: a request without a credential acts as the development principal (AUTH_REQUIRED=false),
   * so a bare GET is held to `bareGetAllowed` (where keys are required it is refused with 401 anyway);
   * `graphiql`: GraphiQL is served (a bare GET accepting text/html is then its page).
   */
  { keyless, graphiql }: { keyless: boolean; graphiql: boolean } = { keyless: false, graphiql: false },
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    const url = urlOf(request);
    if (url === null || (url.pathname !== endpoint && namesEndpoint(request.url ?? "", url, endpoint))) {
      response.writeHead(404, { connection: "close" }).end();
      return;
    }
    if (url.pathname !== endpoint) return handler(request, response);
    const message = !pageRequestAllowed(request, origins, allowedHosts)
      ? CROSS_SITE_MESSAGE
      : keyless && !bareGetAllowed(request, graphiql)
        ? BARE_GET_MESSAGE
        : null;
    if (message === null) return handler(request, response);
    // Not even the refusal may be shown in another site's frame.
    response.writeHead(403, {
      "content-type": "application/json; charset=utf-8",
      "content-security-policy": "frame-ancestors 'none'",
      "x-frame-options": "DENY",
      connection: "close",
    });
    response.end(JSON.stringify({ errors: [{ message, extensions: { code: "CROSS_SITE_REQUEST" } }] }));
  };
}

/** The request's URL as Yoga reads it (its Host, then the request target verbatim); null when it is none. */
function urlOf(request: IncomingMessage): URL | null {
  try {
    return new URL(`http://${request.headers.host ?? "localhost"}${request.url ?? "/"}`);
  } catch {
    return null;
  }
}

/** Whether Yoga would take this URL for the endpoint's: one ending in it, with or without a slash, sent or read. */
function namesEndpoint(target: string, url: URL, endpoint: string): boolean {
  return [target, url.pathname + url.search].some((spelling) => spelling.endsWith(endpoint) || spelling.endsWith(`${endpoint}/`));
}
