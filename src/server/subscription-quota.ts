// Fair shares of the live connections (issue 36): how many subscriptions one API key and one
// principal may hold open on this instance at once (MAX_SUBSCRIPTIONS_PER_KEY), over graphql-ws
// and SSE alike. One more is refused with SUBSCRIPTION_LIMIT as the operation's error: the
// connection stays open and its other subscriptions go on. An access token holds its end user's
// places (end-user.ts: every token minted for one endUser shares them), at most
// MAX_SUBSCRIPTIONS_PER_TOKEN, not its minting key's: one end user's page cannot take the
// places of the team's backend or of the other end users (the principal's cap still counts them all).
// The principal's access tokens together hold at most half of its places: however many end users'
// pages are open, its API keys keep the other half.
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import { type EndUserAccess, endUserOf } from "../domain/principal/end-user.js";

/** Who holds a subscription: its principal, and its credential when it has one. */
export type Holder = { principalId: string; keyId?: string; credentialId?: string; access?: EndUserAccess };

export class SubscriptionQuota {
  private readonly open = new Map<string, number>();

  /** `max` for a key and for a principal; `maxPerToken` for one access token (default: `max`). */
  constructor(
    readonly max: number,
    readonly maxPerToken = max,
  ) {}

  /** Takes a place for one subscription; its release (call once when it ends), or the error when the holder is at the cap. */
  acquire(holder: Holder): (() => void) | GraphQLError {
    // An access token's places are its end user's (end-user.ts), any other credential's its own.
    const credential = holder.access ? `end-user:${endUserOf(holder.keyId, holder.access)}` : (holder.credentialId ?? holder.keyId);
    const counters = [
      `principal:${holder.principalId}`,
      ...(holder.access ? [`tokens:${holder.principalId}`] : []),
      ...(credential ? [`credential:${credential}`] : []),
    ];
    const full = counters.find((counter) => (this.open.get(counter) ?? 0) >= this.capOf(counter));
    if (full) {
      const whose = WHOSE[full.slice(0, full.indexOf(":"))] ?? `${holder.access ? "This access token" : "This API key"} already has`;
      return new GraphQLError(`${whose} ${this.capOf(full)} subscriptions open; close one first.`, {
        extensions: { code: "SUBSCRIPTION_LIMIT", limit: this.capOf(full) },
      });
    }
    for (const counter of counters) this.open.set(counter, (this.open.get(counter) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const counter of counters) {
        const left = (this.open.get(counter) ?? 1) - 1;
        if (left === 0) this.open.delete(counter);
        else this.open.set(counter, left);
      }
    };
  }

  private capOf(counter: string): number {
    if (counter.startsWith("credential:end-user:")) return this.maxPerToken;
    return counter.startsWith("tokens:") ? Math.max(1, Math.floor(this.max / 2)) : this.max;
  }
}

const WHOSE: Record<string, string> = { principal: "Your principal already has", tokens: "Your principal's access tokens already hold" };

/**
 * The quota for subscriptions over HTTP (SSE): a place is taken when the subscription starts and
 * given back when its stream ends. graphql-ws operations are counted by the WebSocket server
 * (their context carries the socket), where one execution may serve many subscribers.
 */
export function subscriptionQuotaPlugin(quota: SubscriptionQuota): Plugin<{ actor?: Holder; socket?: unknown }> {
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const { actor, socket } = args.contextValue;
      if (socket || !actor) return;
      const release = quota.acquire(actor);
      if (release instanceof GraphQLError) {
        setResultAndStopExecution({ errors: [release] });
        return;
      }
      return {
        onSubscribeError: release,
        // An error instead of a stream ends at once; a stream gives the place back when it ends.
        onSubscribeResult: ({ result }) => {
          if (!(Symbol.asyncIterator in Object(result))) release();
          else return { onEnd: release };
        },
      };
    },
  };
}
