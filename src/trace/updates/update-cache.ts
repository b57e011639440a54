// What the subscribers of one trace update share (T5): over graphql-ws, the whole response to the
// update for each distinct selection (shared-subscription-results.ts); and the update's reads —
// its span, its event — for selections and transports (SSE) that execute on their own
// (update-reads.ts). One cache for both, bounded in count and age: an entry only matters while
// its update is being delivered to the trace's subscribers, which takes a few seconds at most.
import { LRUCache } from "lru-cache";
import type { PrismaClient } from "../../generated/prisma/client.js";

export type UpdateCacheOptions = {
  /** How long an entry is shared after it was loaded. */
  ttlMs?: number;
  /** Entries kept at most; the least recently used go first. */
  maxEntries?: number;
};

export class UpdateCache {
  // Promises, so concurrent readers of an entry still loading share its one load.
  private readonly entries: LRUCache<string, Promise<unknown>>;

  constructor(options: UpdateCacheOptions = {}) {
    this.entries = new LRUCache({ max: options.maxEntries ?? 10_000, ttl: options.ttlMs ?? 10_000 });
  }

  /** The value under `key`, loaded by `load` unless it is still here. */
  read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) return hit as Promise<T>;
    const value = load();
    this.entries.set(key, value);
    return value;
  }
}

const caches = new WeakMap<PrismaClient, UpdateCache>();

/** The update cache of one database's traces: one per process and database, whoever reads. */
export function updateCacheOf(prisma: PrismaClient): UpdateCache {
  let cache = caches.get(prisma);
  if (!cache) caches.set(prisma, (cache = new UpdateCache()));
  return cache;
}
