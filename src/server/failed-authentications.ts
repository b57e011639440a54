// Failed authentications per client address (AUTH_FAILURES_PER_MINUTE): every credential an
// address sends that is refused (a wrong or revoked API key, a forged token) takes a token from the
// address's bucket, and once it is empty the address's next credentials are refused with
// RATE_LIMITED (HTTP 429 with Retry-After; a graphql-ws connection is closed with 4429) before
// anything looks them up: a flood of wrong keys costs the database nothing past the burst (an
// IPv6 client is its /64, as for its connections: client-connections.ts; behind a trusted proxy,
// the client it names: client-address.ts). A client with a good
// credential on another address is not held back; on the flooding address every credential
// waits, since nothing tells a good one from a bad one without the lookup.
import { GraphQLError } from "graphql";
import type { Actor } from "../domain/principal/principal-service.js";
import { type Authenticate, isUncountedRefusal } from "../graphql/authenticate.js";
import { clientOf } from "./client-connections.js";
import { rateLimitedError, type TokenBuckets } from "./rate-limit.js";

/** Authenticates a credential sent from a client address (undefined: a request not received over the network). */
export type AuthenticateFrom = (authorization: string | null | undefined, address: string | undefined) => Promise<Actor>;

/** The close code of a graphql-ws connection refused because its address failed too often (clients do not retry it). */
export const AUTH_FLOOD_CLOSE_CODE = 4429;

const TOO_MANY_FAILURES = "Too many failed authentications from this address";

/**
 * Whether an error refused the request's credential (not a store failing), counted: all but an
 * access token its key signed that expired (or whose key was revoked) and a sign-in token refused
 * by its signature, which end users behind one address send without being a flood.
 */
const isCountedRefusal = (error: unknown) => error instanceof GraphQLError && error.extensions.code === "UNAUTHENTICATED" && !isUncountedRefusal(error);

/**
 * `authenticate`, with each address's failures counted in `failures` (none: not counted). An
 * address's lookups in flight here are at most the tokens its bucket holds: each of them may
 * fail and take one, so more sent at once wait for one of them to end (a good key's take a
 * moment) instead of all being looked up against the same last token.
 */
export function guardFailedAuthentications(
  authenticate: Authenticate,
  failures: TokenBuckets | undefined,
  countRejected: (reason: string) => void,
): AuthenticateFrom {
  if (!failures) return (authorization) => authenticate(authorization);
  const inFlight = new Map<string, Set<Promise<unknown>>>();
  return async (authorization, address) => {
    // No credential: nothing to look up (the development principal, or a 401 at once). Any other,
    // an API key or a token, waits behind the address's failures: a forged token costs a lookup too.
    if (authorization == null || authorization.trim() === "") return authenticate(authorization);
    const bucket = `address:${clientOf(address)}`;
    for (;;) {
      const room = await failures.peek(bucket);
      if (room.tokens === 0) {
        countRejected("authentication_failures");
        throw rateLimitedError(room.retryAfterSeconds, TOO_MANY_FAILURES);
      }
      const pending = inFlight.get(bucket);
      if (!pending || pending.size < room.tokens) break;
      await Promise.race(pending);
    }
    // Counted until its failure, if it fails, has taken its token.
    const attempt = authenticate(authorization).catch(async (error: unknown) => {
      if (isCountedRefusal(error)) await failures.take(bucket);
      throw error;
    });
    const settled = attempt.then(
      () => undefined,
      () => undefined,
    );
    const pending = inFlight.get(bucket) ?? new Set();
    inFlight.set(bucket, pending.add(settled));
    void settled.then(() => {
      pending.delete(settled);
      if (pending.size === 0 && inFlight.get(bucket) === pending) inFlight.delete(bucket);
    });
    return attempt;
  };
}

/** Whether an authentication's error is the refusal of a flooding address. */
export const isAuthenticationFlood = (error: unknown): error is GraphQLError => error instanceof GraphQLError && error.extensions.code === "RATE_LIMITED";
