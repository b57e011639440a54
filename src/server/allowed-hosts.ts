// No DNS rebinding. A page whose name is re-pointed at this server's address is same-origin with
// it in the browser's eyes, so the name the browser asked for (the `Host` header) is the only
// thing that tells such a page from the server's own: only the names the operator listed
// (ALLOWED_HOSTS; the loopback names when the server binds to a loopback address) are served.
// Every other name gets 421 Misdirected Request before anything executes — HTTP, SSE and
// WebSocket upgrades alike — and a WebSocket's Origin is compared with the listed names, never
// with the attacker-chosen `Host`.
import type { IncomingMessage, ServerResponse } from "node:http";

/** The names of a loopback address, served by default when the server binds to one (any port). */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/**
 * The names served by default on a loopback bind address: the loopback names and the address
 * itself (127.0.0.2 is a loopback address a browser names as such).
 */
export function loopbackHostsOf(host: string): string[] {
  const bound = normaliseHostName(host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);
  return LOOPBACK_HOSTS.includes(bound) ? [...LOOPBACK_HOSTS] : [...LOOPBACK_HOSTS, bound];
}

/** Whether a bind address is a loopback one (only this machine can reach it). */
export function isLoopbackAddress(host: string): boolean {
  const name = normaliseHostName(host.replace(/^\[(.*)\]$/, "$1"));
  return name === "localhost" || name === "::1" || /^127(\.\d{1,3}){3}$/.test(name);
}

/** A host name as rules compare it: lower case, without the trailing dot of a fully qualified name. */
export function normaliseHostName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** `host[:port]` (IPv6 in brackets) split and normalised; null when it is not one. */
function parseHost(value: string): { name: string; port?: string } | null {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(value.trim());
  if (!match) return null;
  return { name: normaliseHostName(match[1]!), port: match[2] };
}

/**
 * Whether a `Host` value names this server: an entry with a port matches that port only, an
 * entry without one matches any port. `undefined` as the list means every name is served.
 */
export function hostAllowed(host: string | undefined | null, allowed: readonly string[] | undefined): boolean {
  if (allowed === undefined) return true;
  const asked = host ? parseHost(host) : null;
  if (!asked) return false;
  return allowed.some((entry) => {
    const listed = parseHost(entry);
    return listed !== null && listed.name === asked.name && (listed.port === undefined || listed.port === asked.port);
  });
}

/** Whether a browser page's Origin is one of the listed hosts (its scheme plays no part). */
export function originHostAllowed(origin: string, allowed: readonly string[]): boolean {
  try {
    return hostAllowed(new URL(origin).host, allowed);
  } catch {
    return false;
  }
}

export const MISDIRECTED_MESSAGE = "This server does not answer to that host name (ALLOWED_HOSTS).";

/** The HTTP handler, answering 421 to every request whose Host is not listed. */
export function guardHosts(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  allowed: readonly string[] | undefined,
): (request: IncomingMessage, response: ServerResponse) => void {
  if (allowed === undefined) return handler;
  return (request, response) => {
    if (hostAllowed(request.headers.host, allowed)) return handler(request, response);
    response.writeHead(421, { "content-type": "application/json; charset=utf-8", connection: "close" });
    response.end(JSON.stringify({ errors: [{ message: MISDIRECTED_MESSAGE, extensions: { code: "MISDIRECTED_REQUEST" } }] }));
  };
}
