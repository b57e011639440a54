// The request rate limits' settings (RATE_LIMIT_PER_MINUTE and its companions), from their values.
import type { Config } from "./config-types.js";

/**
 * RATE_LIMIT_PER_MINUTE's buckets (off when unset), holding RATE_LIMIT_BURST (ten seconds' worth by
 * default); and the principals' (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE, ten times as many by default,
 * 0: none), each holding as many seconds' worth as a credential's.
 */
export function rateLimitsOf(
  perMinute: number | undefined,
  burst: number | undefined,
  perPrincipal: number | undefined,
): Pick<Config, "rateLimit" | "principalRateLimit"> {
  if (!perMinute) return {};
  const rateLimit = { perMinute, burst: burst ?? Math.max(1, Math.ceil(perMinute / 6)) };
  const principalPerMinute = perPrincipal ?? perMinute * 10;
  if (principalPerMinute === 0) return { rateLimit };
  return {
    rateLimit,
    principalRateLimit: { perMinute: principalPerMinute, burst: Math.max(1, Math.ceil((rateLimit.burst * principalPerMinute) / perMinute)) },
  };
}
