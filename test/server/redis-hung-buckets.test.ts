// Redis hung (a link that connects and then answers nothing, through a fault proxy): the rate
// limits (a credential's and a principal's) and the failed authentications, shared through Redis as the server opens them, fall back
// to the instance's own buckets, and every request that carries a key is answered as usual —
// it does not wait with them.
import { afterEach, describe, expect, inject, it } from "vitest";
import { openAuthFailures, openPrincipalRateLimits, openRateLimits } from "../../src/compose/infrastructure.js";
import { loadConfig } from "../../src/config.js";
import type { TokenBuckets } from "../../src/server/rate-limit.js";
import { warningLogger } from "../support/warning-logger.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.runIf(redisUrl || process.env.CI)("Redis hung under the shared buckets", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it("requests with a key are answered from the instance's own buckets, and the fallback is logged once", async () => {
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const { logger, warnings } = warningLogger();
    const config = loadConfig({ REDIS_URL: proxy.url, REDIS_PREFIX: `test-${process.pid}-${Date.now()}:hung-buckets:` });
    const opened = [
      (await openAuthFailures(config, logger))!,
      (await openRateLimits({ ...config, rateLimit: { perMinute: 6_000, burst: 100 } }, logger))!,
      (await openPrincipalRateLimits({ ...config, principalRateLimit: { perMinute: 6_000, burst: 100 } }, logger))!,
    ];
    const [authFailures, rateLimits, principalRateLimits] = opened as [TokenBuckets, TokenBuckets, TokenBuckets];
    cleanups.push(() => Promise.all(opened.map((buckets) => buckets.close?.())));
    const t = await startTestApp("pglite", { authRequired: true, authFailures, rateLimits, principalRateLimits });
    cleanups.push(() => t.close());
    const key = await t.createPrincipal("hung-buckets");
    const ask = () => withTimeout(rawRequest(t.app, key, "{ __typename }"), 5_000);

    expect(await ask()).toEqual({ data: { __typename: "Query" } });
    expect(warnings).toEqual([]);

    proxy.hang();
    // Each request draws from every kind of bucket (the failures' before its key is looked up).
    for (let i = 0; i < 5; i += 1) expect(await ask()).toEqual({ data: { __typename: "Query" } });
    expect(await Promise.all(Array.from({ length: 20 }, ask))).toEqual(Array(20).fill({ data: { __typename: "Query" } }));
    expect(warnings.map(([message]) => message)).toEqual([
      "failed authentications fall back to this instance's own buckets: Redis failed",
      "rate limits fall back to this instance's own buckets: Redis failed",
      "principals' rate limits fall back to this instance's own buckets: Redis failed",
    ]);

    // Redis answering again: requests are answered as before.
    proxy.heal();
    expect(await ask()).toEqual({ data: { __typename: "Query" } });
  }, 60_000);
});
