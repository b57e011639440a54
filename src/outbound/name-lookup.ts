// How principals' host names are resolved. The system's lookup (getaddrinfo) runs on libuv's
// thread pool, and every lookup of the process waits in one queue for at most two of its threads:
// a principal fetching names whose name server never answers (random labels under a zone whose
// server drops queries) would hold them for seconds each, and every other principal's lookup —
// a fetch, a webhook delivery, an MCP server, a sign-in's keys — would wait behind them. So a name
// is asked of the name servers directly (c-ares, on the event loop, with its own timeout and tries;
// A and AAAA at once, CNAMEs followed), with a bound on lookups in flight per principal and in all.
// Only hosts an operator named exactly (which may live in /etc/hosts) go through the system's
// lookup, a few at a time and once per name however many requests wait for it.
import { Resolver as DnsResolver, lookup } from "node:dns/promises";

/** A lookup of principals' names asks each name server this long at first (c-ares then waits longer before each retry). */
export const NAME_TIMEOUT_MS = 2_000;
/** How many times each name server is asked before a name counts as unanswered. */
export const NAME_TRIES = 2;
/** Lookups of principals' names in flight at once, all principals together; further ones wait their turn. */
export const NAMES_IN_FLIGHT = 256;
/** Lookups in flight for one principal's requests; its further ones wait, other principals' do not. */
export const NAMES_IN_FLIGHT_PER_PRINCIPAL = 16;
/** System lookups (hosts an operator named) in flight at once: never more of the thread pool than this. */
export const SYSTEM_LOOKUPS_IN_FLIGHT = 1;

/** A name that did not resolve, with the code the system's lookup gives it (ENOTFOUND, or EAI_AGAIN when no answer came). */
export function unresolved(host: string, code: "ENOTFOUND" | "EAI_AGAIN"): Error {
  return Object.assign(new Error(`getaddrinfo ${code} ${host}`), { code, hostname: host });
}

/** Admits work under a bound in all and a bound per key, first come first served among those that may go. */
export function createSlots(total: number, perKey: number) {
  let running = 0;
  const byKey = new Map<string, number>();
  const waiting: { key: string; go: () => void }[] = [];
  const mayStart = (key: string) => running < total && (byKey.get(key) ?? 0) < perKey;
  const start = (key: string) => {
    running += 1;
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
  };
  const finish = (key: string) => {
    running -= 1;
    const left = (byKey.get(key) ?? 1) - 1;
    if (left === 0) byKey.delete(key);
    else byKey.set(key, left);
    for (let index = 0; index < waiting.length && running < total; ) {
      const next = waiting[index]!;
      if (!mayStart(next.key)) {
        index += 1;
        continue;
      }
      waiting.splice(index, 1);
      start(next.key);
      next.go();
    }
  };
  return {
    async run<T>(key: string, work: () => Promise<T>): Promise<T> {
      if (mayStart(key)) start(key);
      else await new Promise<void>((go) => waiting.push({ key, go }));
      try {
        return await work();
      } finally {
        finish(key);
      }
    },
    /** Lookups in flight and waiting (tests). */
    get counts() {
      return { running, waiting: waiting.length };
    },
  };
}

let resolver: DnsResolver | undefined;
const principalsNames = createSlots(NAMES_IN_FLIGHT, NAMES_IN_FLIGHT_PER_PRINCIPAL);
const systemLookups = createSlots(SYSTEM_LOOKUPS_IN_FLIGHT, SYSTEM_LOOKUPS_IN_FLIGHT);
const systemInFlight = new Map<string, Promise<string[]>>();

const NOT_FOUND = new Set(["ENOTFOUND", "ENODATA", "ENONAME", "EBADNAME", "EBADQUERY", "EFORMERR"]);

/** A name's IPv4 and IPv6 addresses, asked of the name servers at once; a family without an answer adds none. */
async function resolveAtServers(host: string): Promise<string[]> {
  // Made at first use: the name servers are those /etc/resolv.conf names then.
  resolver ??= new DnsResolver({ timeout: NAME_TIMEOUT_MS, tries: NAME_TRIES });
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const addresses = [...(v4.status === "fulfilled" ? v4.value : []), ...(v6.status === "fulfilled" ? v6.value : [])];
  if (addresses.length > 0) return addresses;
  const codes = [v4, v6].map((result) => (result.status === "rejected" ? String((result.reason as { code?: unknown }).code) : "ENODATA"));
  throw unresolved(host, codes.every((code) => NOT_FOUND.has(code)) ? "ENOTFOUND" : "EAI_AGAIN");
}

/**
 * A principal's name; `requester` is whose requests wait for it (their lookups in flight are bounded
 * together: a principal, or a guard's own setting when no principal is known). `localhost`
 * and its subdomains are loopback wherever they are asked (RFC 6761), as the system's lookup has them.
 */
export function resolvePrincipalsName(host: string, requester: string): Promise<string[]> {
  if (/(^|\.)localhost\.?$/i.test(host)) return Promise.resolve(["127.0.0.1", "::1"]);
  return principalsNames.run(requester, () => resolveAtServers(host));
}

/** A host an operator named exactly, by the system's lookup (/etc/hosts, then DNS): one lookup per name at a time. */
export function resolveNamedHost(host: string): Promise<string[]> {
  let pending = systemInFlight.get(host);
  if (!pending) {
    pending = systemLookups
      .run("", async () => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address))
      .finally(() => systemInFlight.delete(host));
    systemInFlight.set(host, pending);
  }
  return pending;
}
