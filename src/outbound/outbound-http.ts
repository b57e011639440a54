// Outbound HTTP for principals' URLs (http_fetch, HTTP MCP servers) over undici, with the address
// check on the socket itself: every connection — the first request, each redirect hop, each
// reconnect — resolves the name once, refuses internal addresses, and connects to exactly the
// addresses it checked. Checking a name and then letting `fetch` resolve it again would leave a
// window for DNS rebinding; a check before the request would miss redirects. A name that resolves
// inside the network and one that does not resolve are refused in the same words (the caller could
// otherwise map internal names by asking); the log says which it was.
import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP } from "node:net";
import type { Agent, buildConnector } from "undici";
import {
  FAILURE_CODE,
  INTERNAL_ADDRESS,
  internalAddressMessage,
  isInternalAddress,
  namedExactly,
  unreachableNameMessage,
} from "../domain/capabilities/outbound-policy.js";
import type { Logger } from "../logger.js";
import { resolveNamedHost, resolvePrincipalsName, unresolved } from "./name-lookup.js";

/** A connection refused because its address is inside the server's network (or its name resolves to none outside it). */
export class InternalAddressError extends Error {
  readonly code = INTERNAL_ADDRESS;
  constructor(host: string, setting: string, message = internalAddressMessage(host, setting)) {
    super(message);
    this.name = "InternalAddressError";
  }
}

/** The resolver's codes for a name that has no address: refused as one that resolves inside the network is. */
const NO_ADDRESS = new Set(["ENOTFOUND", "ENODATA", "EAI_NONAME", "EAI_NODATA"]);

export type Resolver = (host: string) => Promise<string[]>;

export type OutboundHttpOptions = {
  /** Hosts an operator named exactly (`host` or `host:port`) may resolve to internal addresses. */
  allowedHosts: readonly string[];
  /** The setting those hosts come from, named when a connection is refused. */
  setting: string;
  /**
   * Resolves a host name to its addresses (tests replace it). By default a principal's name is asked
   * of the name servers directly and a host the operator named exactly goes through the system's
   * lookup (name-lookup.ts).
   */
  resolve?: Resolver;
  connectTimeoutMs?: number;
  /** The longest an idle socket is kept for reuse, whatever Keep-Alive the server asks for (undici's 10 minutes without it). */
  keepAliveMaxMs?: number;
  /** The most sockets open to one origin at once; further requests wait for one (unbounded without it). */
  connectionsPerOrigin?: number;
  /** Where a refused name is told in full: whether it resolved inside the network or not at all. */
  logger?: Logger;
};

export type OutboundHttp = {
  /** `fetch`, with every connection checked; a refusal rejects with InternalAddressError itself. Its names count against the guard's own setting. */
  fetch: typeof fetch;
  /**
   * `fetch` for one principal's requests, over connections of that principal's own: the names they
   * wait for count against that principal's lookups in flight, and no other principal's.
   */
  fetchFor(principal: string): typeof fetch;
  close(): Promise<void>;
};

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/** How long a principal's connections are kept once none of its requests is waiting for an answer, when the guard sets no keep-alive. */
export const PRINCIPAL_IDLE_MS = 60_000;

/** One requester's connections (undici's Agent, a pool per origin) and its requests waiting for an answer. */
type Requester = { agent: Agent; waiting: number; idle?: NodeJS.Timeout };

/**
 * undici (about 3.5 MB of heap) is loaded by the first request, not at start: a server whose
 * principals never fetch a URL never holds it.
 *
 * Each principal's requests go over connections of their own (an Agent per principal): undici
 * resolves a name when a pool opens a socket, and a socket is opened for whichever request of the
 * pool waits first, so a pool shared by principals could not tell whose lookup it makes. A
 * principal's Agent is closed once none of its requests has waited for an answer for a while.
 */
export function createOutboundHttp(options: OutboundHttpOptions): OutboundHttp {
  let undici: Promise<Pick<typeof import("undici"), "Agent" | "buildConnector" | "fetch">> | undefined;
  const load = () => (undici ??= import("undici"));
  let shared: Agent | undefined;
  const principals = new Map<string, Requester>();
  const idleMs = options.keepAliveMaxMs ?? PRINCIPAL_IDLE_MS;
  let closed = false;

  const send = async (agent: Agent, input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const { fetch: undiciFetch } = await load();
    try {
      return (await undiciFetch(input as never, { ...(init as object), dispatcher: agent } as never)) as unknown as Response;
    } catch (error) {
      // undici reports a failed connection as "fetch failed" with the reason as its cause: the
      // reason itself is thrown, so callers that see only a message (the MCP SDK) still see its code.
      const cause = (error as { cause?: unknown }).cause;
      throw cause instanceof Error && typeof (cause as { code?: unknown }).code === "string" ? cause : error;
    }
  };
  const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The guard's own setting, which no principal key equals, is whose lookups these are.
    shared ??= agentFor(await load(), options, options.setting);
    return send(shared, input, init);
  };
  const fetchFor = (principal: string) => async (input: string | URL | Request, init?: RequestInit) => {
    const loaded = await load();
    if (closed) throw new Error("the outbound connections are closed");
    let requester = principals.get(principal);
    if (!requester) {
      requester = { agent: agentFor(loaded, options, `principal:${principal}`), waiting: 0 };
      principals.set(principal, requester);
    }
    const own = requester;
    clearTimeout(own.idle);
    own.waiting += 1;
    try {
      return await send(own.agent, input, init);
    } finally {
      own.waiting -= 1;
      if (own.waiting === 0 && !closed) {
        // A body still streaming when it closes is read to its end: undici's close waits for it.
        own.idle = setTimeout(() => {
          if (principals.get(principal) === own) principals.delete(principal);
          void own.agent.close().catch(() => undefined);
        }, idleMs).unref();
      }
    }
  };
  return {
    fetch: guardedFetch as typeof fetch,
    fetchFor: (principal) => fetchFor(principal) as typeof fetch,
    close: async () => {
      closed = true;
      const agents = [...principals.values()].map((requester) => {
        clearTimeout(requester.idle);
        return requester.agent;
      });
      principals.clear();
      await Promise.all([...agents, ...(shared ? [shared] : [])].map((agent) => agent.close()));
    },
  };
}

type Undici = { Agent: typeof Agent; buildConnector: typeof buildConnector };

/** An Agent whose connections resolve principals' names as `requester`'s lookups (name-lookup.ts). */
function agentFor({ Agent, buildConnector }: Undici, options: OutboundHttpOptions, requester: string): Agent {
  const resolve = (hostname: string, mayBeInternal: boolean): Promise<string[]> => {
    if (options.resolve) return options.resolve(hostname);
    return mayBeInternal ? resolveNamedHost(hostname) : resolvePrincipalsName(hostname, requester);
  };
  const timeout = options.connectTimeoutMs ?? 10_000;
  const direct = buildConnector({ timeout });

  /** The one refusal of a name that leads nowhere outside the network, whichever way it does. */
  const refuseName = (hostname: string, reason: string, fields: Record<string, unknown>): InternalAddressError => {
    options.logger?.warn("outbound connection refused", { host: hostname, setting: options.setting, reason, ...fields });
    return new InternalAddressError(hostname, options.setting, unreachableNameMessage(hostname, options.setting));
  };
  const lookupFor =
    (mayBeInternal: boolean) =>
    (hostname: string, lookupOptions: LookupOptions, callback: LookupCallback): void => {
      resolve(hostname, mayBeInternal).then(
        (resolved) => {
          const family = typeof lookupOptions.family === "number" ? lookupOptions.family : 0;
          const addresses = resolved.filter((address) => isIP(address) !== 0 && (family === 0 || isIP(address) === family));
          if (addresses.length === 0) {
            if (mayBeInternal) return callback(unresolved(hostname, "ENOTFOUND"), []);
            return callback(refuseName(hostname, "it does not resolve", { resolved }), []);
          }
          // One internal answer refuses the name: which address the socket tries first is not ours to pick.
          if (!mayBeInternal && addresses.some(isInternalAddress))
            return callback(refuseName(hostname, "it resolves to an address inside the network", { addresses }), []);
          if (lookupOptions.all)
            return callback(
              null,
              addresses.map((address) => ({ address, family: isIP(address) })),
            );
          callback(null, addresses[0]!, isIP(addresses[0]!));
        },
        (error: Error) => {
          const code = (error as { code?: unknown }).code;
          if (mayBeInternal || typeof code !== "string" || !NO_ADDRESS.has(code)) return callback(error, []);
          callback(refuseName(hostname, "it does not resolve", { code }), []);
        },
      );
    };

  // The name is resolved here, once, and the socket connects to the addresses that were checked.
  const checked = buildConnector({ timeout, lookup: lookupFor(false) as never });
  const named = buildConnector({ timeout, lookup: lookupFor(true) as never });

  const keepAlive = options.keepAliveMaxMs === undefined ? {} : { keepAliveTimeout: options.keepAliveMaxMs, keepAliveMaxTimeout: options.keepAliveMaxMs };
  return new Agent({
    ...keepAlive,
    ...(options.connectionsPerOrigin !== undefined && { connections: options.connectionsPerOrigin }),
    connect(target, callback) {
      const host = target.hostname.toLowerCase().replace(/^\[|\]$/g, "");
      const port = target.port || (target.protocol === "https:" ? "443" : "80");
      const mayBeInternal = namedExactly(host, port, options.allowedHosts);
      // An address literal is not looked up: it is checked as written.
      if (isIP(host)) {
        if (mayBeInternal || !isInternalAddress(host)) return direct(target, callback);
        return callback(new InternalAddressError(target.port ? `${target.hostname}:${target.port}` : target.hostname, options.setting), null);
      }
      return (mayBeInternal ? named : checked)(target, callback);
    },
  });
}

/** What a failed request may tell the principal: the kind of failure, by its error code (FAILURE_CODE). */
export function connectionFailure(error: unknown): string {
  for (let current: unknown = error; current instanceof Error; current = (current as { cause?: unknown }).cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && FAILURE_CODE.exec(code)?.[1] === code) return `the connection failed (${code})`;
  }
  return "the connection failed";
}
