// Rate-limit buckets in Redis (REDIS_URL), shared by every instance: one Lua script refills and
// takes atomically, by Redis's own clock, so instances whose clocks differ still agree.
import type { Redis } from "ioredis";
import { closeRedisClient, connectWithin, logRedisLink, REDIS_CONNECT_TIMEOUT_MS, RedisUnavailableError, redisAddress } from "../events/redis-link-log.js";
import type { Logger } from "../logger.js";
import { type RateDecision, type RateLimitSettings, type Room, shareOf, type TokenBuckets } from "./rate-limit.js";

const TAKE = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local per_ms = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * per_ms)
local wait = 0
if tokens >= 1 then tokens = tokens - cost else wait = math.ceil((1 - tokens) / per_ms) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / per_ms) + 1000)
return {wait, math.floor(tokens)}`;

/** How long one bucket's command may wait for Redis before it fails (the caller then uses its own buckets). */
export const REDIS_COMMAND_TIMEOUT_MS = 1_000;

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class RedisTokenBuckets implements TokenBuckets {
  private constructor(
    private readonly redis: Redis,
    private readonly settings: RateLimitSettings,
    private readonly prefix: string,
  ) {}

  /**
   * With a `logger`, an outage of Redis is logged once, and its end once (redis-link-log.ts).
   * Like the event bus, fails at start (RedisUnavailableError) when Redis is unreachable or does
   * not answer within `connectTimeoutMs`, with nothing left open. The buckets' Redis keys start
   * with `prefix` (default `dossier:rate:`); `use` names them in the log. A command Redis does not
   * answer within `commandTimeout` ms fails (RedisTokenBuckets never waits longer on a hung link).
   */
  static async connect(
    url: string,
    settings: RateLimitSettings,
    {
      logger,
      connectTimeoutMs = REDIS_CONNECT_TIMEOUT_MS,
      prefix = "dossier:rate:",
      use = "rate limits",
      commandTimeout = REDIS_COMMAND_TIMEOUT_MS,
    }: { logger?: Logger; connectTimeoutMs?: number; prefix?: string; use?: string; commandTimeout?: number } = {},
  ): Promise<RedisTokenBuckets> {
    const { Redis } = await import("ioredis");
    // Few retries, and a bound on each command's wait (a link that hangs refuses nothing): a
    // request waits for its bucket, and the caller falls back to local buckets.
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout });
    try {
      await connectWithin([redis], connectTimeoutMs);
    } catch (error) {
      throw new RedisUnavailableError(`Redis for the ${use} at ${redisAddress(redis)} (REDIS_URL) is unreachable: ${(error as Error).message}`);
    }
    if (logger) logRedisLink(use, [redis], logger);
    redis.defineCommand("dossierTakeToken", { numberOfKeys: 1, lua: TAKE });
    return new RedisTokenBuckets(redis, settings, prefix);
  }

  async take(key: string, share = 1): Promise<RateDecision> {
    const { waitMs } = await this.draw(key, 1, shareOf(this.settings, share));
    return waitMs === 0 ? { allowed: true } : { allowed: false, retryAfterSeconds: seconds(waitMs) };
  }

  async peek(key: string): Promise<Room> {
    const { waitMs, tokens } = await this.draw(key, 0, this.settings);
    return { tokens, retryAfterSeconds: waitMs === 0 ? 0 : seconds(waitMs) };
  }

  /** Refills the bucket (at `settings`) and takes `cost` tokens when one is there: how long until one is, and the whole tokens left. */
  private async draw(key: string, cost: 0 | 1, settings: RateLimitSettings): Promise<{ waitMs: number; tokens: number }> {
    const take = (this.redis as unknown as { dossierTakeToken(key: string, perMs: string, burst: string, cost: string): Promise<[number, number]> })
      .dossierTakeToken;
    const perMs = String(settings.perMinute / 60_000);
    const [waitMs, tokens] = await take.call(this.redis, `${this.prefix}${key}`, perMs, String(settings.burst), String(cost));
    return { waitMs: Number(waitMs), tokens: Number(tokens) };
  }

  /** Within about a second even with Redis unreachable or its link hung; no reconnection is tried after it. */
  async close(): Promise<void> {
    await closeRedisClient(this.redis);
  }
}
