// Request rate limits (issue 36): a token bucket per credential — an API key (or any other
// credential a request authenticates with) — and per client address for requests without one.
// RATE_LIMIT_PER_MINUTE tokens flow in per minute, up to RATE_LIMIT_BURST; every GraphQL request
// over HTTP (an SSE subscription when it starts) and every graphql-ws operation takes one. A
// request without a token is answered RATE_LIMITED (HTTP 429 with Retry-After where the transport
// has a status) before anything is parsed or executed. A request with a credential also takes one
// from its principal's bucket (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE): a principal's many keys and
// access tokens together draw no more than it. A request with an access token takes one more, from
// its principal's access tokens' bucket, which holds half as much: however many end users' browsers
// a team mints tokens for, they draw at most half its requests, and its API keys keep the other
// half. The buckets live in Redis when REDIS_URL is set, so every instance draws from the same
// ones, and in this process otherwise.
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import { type EndUserAccess, endUserOf } from "../domain/principal/end-user.js";
import type { Logger } from "../logger.js";
import type { IncomingMessage } from "node:http";
import { clientAddressOf } from "./client-address.js";
import { clientOf } from "./client-connections.js";
import { refuse } from "./refused-requests.js";

export type RateLimitSettings = { perMinute: number; burst: number };

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** What a bucket holds: `tokens` whole ones; when none, `retryAfterSeconds` until the next. */
export type Room = { tokens: number; retryAfterSeconds: number };

/** Where buckets are kept: takes one token from the bucket `key`, or says how long until one is there. */
export interface TokenBuckets {
  /** With a `share` below 1, the bucket `key` fills at that share of the rate and holds that share of the burst (at least one). */
  take(key: string, share?: number): Promise<RateDecision>;
  /** The whole tokens the bucket `key` holds now, taking none; with none, how long until one is there. */
  peek(key: string): Promise<Room>;
  close?(): Promise<void>;
}

/** What a request is counted against: its credential when it has one, otherwise its client address; and the credential's principal. */
export type Caller = { principalId?: string; credentialId?: string; keyId?: string; access?: EndUserAccess };

/**
 * The bucket of a request. Any credential — an access token, an API key, or another kind of
 * credential that names itself with `credentialId` — has its own bucket; requests with none share
 * their address's (an IPv6 address's /64: client-connections.ts). An access token's is its end user's (end-user.ts), not its minting key's: one end user's browser
 * spending its tokens leaves the team's backend and every other end user theirs.
 */
export function bucketOf(caller: Caller | undefined, address: string | undefined): string {
  if (caller?.access) return endUserOf(caller.keyId, caller.access);
  if (caller?.credentialId) return `credential:${caller.credentialId}`;
  if (caller?.keyId) return `key:${caller.keyId}`;
  return `address:${clientOf(address)}`;
}

/**
 * The principal's bucket of a request with a credential (an API key, an access token, a sign-in
 * token): every credential of one principal draws from it too. None for a request without a
 * credential — the development principal's keyless requests (AUTH_REQUIRED=false) are anyone's
 * who reaches the server, and count against their address alone.
 */
export function principalBucketOf(caller: Caller | undefined): string | undefined {
  if (!caller?.principalId || !(caller.access || caller.credentialId || caller.keyId)) return undefined;
  return `principal:${caller.principalId}`;
}

/** The share of its principal's requests a principal's access tokens together may draw: its API keys keep the rest. */
export const ACCESS_TOKENS_SHARE = 0.5;

/** The bucket a principal's access tokens draw from together (at ACCESS_TOKENS_SHARE of the principal's); none for other credentials. */
export function accessTokensBucketOf(caller: Caller | undefined): string | undefined {
  return caller?.access && caller.principalId ? `principal-tokens:${caller.principalId}` : undefined;
}

/** A bucket's settings at `share` of them: the rate and the burst (at least one) scaled. */
export function shareOf(settings: RateLimitSettings, share = 1): RateLimitSettings {
  return share === 1 ? settings : { perMinute: settings.perMinute * share, burst: Math.max(1, Math.floor(settings.burst * share)) };
}

/** The request rate limits: the credential's (or address's) buckets, and the principals' (none: not counted). */
export type RateLimits = { requests: TokenBuckets; principals?: TokenBuckets };

/**
 * Takes a request's token from its credential's (or address's) bucket, then — an access token's —
 * from its principal's access tokens' bucket, then from its principal's: refused when any is empty.
 * A request one bucket refuses takes nothing from the ones after it (an end user past its own
 * limit does not drain its team's, nor do end users past their share); one a later bucket refuses
 * has spent its token from the earlier ones.
 */
export async function takeFor(limits: RateLimits, caller: Caller | undefined, address: string | undefined): Promise<RateDecision> {
  const decision = await limits.requests.take(bucketOf(caller, address));
  const principal = principalBucketOf(caller);
  if (!decision.allowed || !limits.principals || !principal) return decision;
  const tokens = accessTokensBucketOf(caller);
  if (tokens) {
    const share = await limits.principals.take(tokens, ACCESS_TOKENS_SHARE);
    if (!share.allowed) return share;
  }
  return limits.principals.take(principal);
}

export function rateLimitedError(retryAfterSeconds: number, what = "Too many requests"): GraphQLError {
  return new GraphQLError(`${what}: try again in ${retryAfterSeconds} s.`, {
    extensions: { code: "RATE_LIMITED", retryAfterSeconds, http: { status: 429, headers: { "Retry-After": String(retryAfterSeconds) } } },
  });
}

/** Buckets in this process: enough for one instance (or when no REDIS_URL is set). */
export class InProcessTokenBuckets implements TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly settings: RateLimitSettings,
    private readonly now: () => number = () => Date.now(),
  ) {}

  async take(key: string, share = 1): Promise<RateDecision> {
    const room = this.refill(key, shareOf(this.settings, share));
    if (room.tokens === 0) return { allowed: false, retryAfterSeconds: room.retryAfterSeconds };
    this.buckets.get(key)!.tokens -= 1;
    return { allowed: true };
  }

  async peek(key: string): Promise<Room> {
    return this.refill(key, this.settings);
  }

  /** The bucket `key` as it is now, its tokens flowed in since it was last touched. */
  private refill(key: string, settings: RateLimitSettings): Room {
    const now = this.now();
    const perMs = settings.perMinute / 60_000;
    const bucket = this.buckets.get(key) ?? { tokens: settings.burst, at: now };
    bucket.tokens = Math.min(settings.burst, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    // Touched buckets move to the end: the oldest untouched ones are dropped first (they refilled).
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > 100_000) this.buckets.delete(this.buckets.keys().next().value!);
    const tokens = Math.floor(bucket.tokens);
    return { tokens, retryAfterSeconds: tokens > 0 ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
  }
}

/** How long a request waits for the shared buckets (Redis answers in a millisecond or two) before it uses this process's own. */
export const SHARED_BUCKETS_TIMEOUT_MS = 500;

/**
 * Shared buckets that fall back to this process's own while the shared store fails (logged once
 * per outage): it refuses, or does not answer within `timeoutMs` (a link that hangs refuses
 * nothing, and every request that counts against a bucket would wait with it). While it fails,
 * requests use this process's buckets at once, and one at a time also asks the shared store,
 * in the background: once it answers, requests use it again.
 */
export class FallbackTokenBuckets implements TokenBuckets {
  private failing = false;
  private probe: Promise<unknown> | undefined;

  constructor(
    private readonly shared: TokenBuckets,
    private readonly local: TokenBuckets,
    private readonly logger: Logger,
    /** What the buckets count, as the log names them. */
    private readonly what = "rate limits",
    private readonly timeoutMs = SHARED_BUCKETS_TIMEOUT_MS,
  ) {}

  take(key: string, share?: number): Promise<RateDecision> {
    return this.draw((buckets) => buckets.take(key, share));
  }

  peek(key: string): Promise<Room> {
    return this.draw((buckets) => buckets.peek(key));
  }

  private async draw<T>(from: (buckets: TokenBuckets) => Promise<T>): Promise<T> {
    if (this.failing) {
      this.probe ??= within(from(this.shared), this.timeoutMs)
        .then(
          () => (this.failing = false),
          () => undefined,
        )
        .finally(() => (this.probe = undefined));
      return from(this.local);
    }
    try {
      return await within(from(this.shared), this.timeoutMs);
    } catch (error) {
      if (!this.failing) this.logger.warn(`${this.what} fall back to this instance's own buckets: Redis failed`, { error: String(error) });
      this.failing = true;
      return from(this.local);
    }
  }

  async close(): Promise<void> {
    await this.shared.close?.();
  }
}

/** `promise`, or a rejection once `ms` have passed without its settling. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The client address of a request Node's HTTP server received (its TCP peer's, or the one a trusted proxy names: client-address.ts). */
export function addressOf(serverContext: unknown): string | undefined {
  return clientAddressOf((serverContext as { req?: IncomingMessage } | undefined)?.req);
}

/**
 * Takes a token for every GraphQL request over HTTP, after authentication (a request whose
 * credential is refused counts against its address), from its credential's and its principal's buckets. Refused: RATE_LIMITED, nothing parsed or executed.
 */
export function rateLimitPlugin(limits: RateLimits, callerOf: (request: Request) => Promise<Caller>, countRejected: (reason: string) => void): Plugin {
  return {
    async onParams({ request, context }) {
      const caller = await callerOf(request).catch(() => undefined);
      const decision = await takeFor(limits, caller, addressOf(context));
      if (decision.allowed) return;
      countRejected("rate_limited");
      refuse(request, rateLimitedError(decision.retryAfterSeconds));
    },
  };
}
