// What the subscribers of one trace update share (T5): over graphql-ws, the whole response to the
// update for each distinct selection (shared-subscription-results.ts); and the update's reads —
// its span, its event — for selections and transports (SSE) that execute on their own
// (update-reads.ts). One cache for both, bounded in bytes and age: an entry only matters while
// its update is being delivered to the trace's subscribers, which takes a few seconds at most,
// and a burst of large updates (full payloads asked for by many selections) must not hold the
// process's memory after it was delivered.
import { LRUCache } from "lru-cache";
import type { PrismaClient } from "../../generated/prisma/client.js";

export type UpdateCacheOptions = {
  /** How long an entry is shared after it was loaded. */
  ttlMs?: number;
  /** Entries kept at most; the least recently used go first. */
  maxEntries?: number;
  /** Bytes kept at most (as the entries' JSON); the least recently used go first. */
  maxBytes?: number;
};

/** What an entry counts before its load has settled. */
const PENDING_BYTES = 1_024;

/** Approximately the memory an entry holds: its JSON's length in UTF-16 code units, twice. */
function bytesOf(value: unknown): number {
  try {
    return 2 * (JSON.stringify(value)?.length ?? 0) + 64;
  } catch {
    return PENDING_BYTES;
  }
}

export class UpdateCache {
  // Promises, so concurrent readers of an entry still loading share its one load.
  private readonly entries: LRUCache<string, Promise<unknown>>;

  constructor(options: UpdateCacheOptions = {}) {
    const maxSize = options.maxBytes ?? 32 * 1024 * 1024;
    this.entries = new LRUCache({
      max: options.maxEntries ?? 10_000,
      ttl: options.ttlMs ?? 10_000,
      maxSize,
      // One entry larger than a quarter of the bound is shared by its waiting readers, never kept.
      maxEntrySize: Math.floor(maxSize / 4),
      sizeCalculation: () => PENDING_BYTES,
    });
  }

  /** The bytes the entries hold (settled ones as measured, loading ones as a small constant). */
  get bytes(): number {
    return this.entries.calculatedSize;
  }

  /** The value under `key`, loaded by `load` unless it is still here. */
  read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) return hit as Promise<T>;
    const value = load();
    this.entries.set(key, value);
    value.then(
      (settled) => {
        // Measured once known; re-set only while this load is still the entry (same age).
        if (this.entries.peek(key) === value) this.entries.set(key, value, { size: bytesOf(settled), noUpdateTTL: true });
      },
      () => {
        if (this.entries.peek(key) === value) this.entries.delete(key);
      },
    );
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
