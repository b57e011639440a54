// Each principal's share of a bounded store that every principal's requests fill (automatic
// persisted queries' texts, parsed documents): a principal holds at most `max` entries and
// `maxBytes` of them, and a principal at its share makes room with its own least recently used
// entries, never another's. The store itself still evicts past its whole bounds, whoever's entry
// it is, and tells the shares (`release`).
//
// An entry several principals use (the same text of the SDK's, sent by everyone) is in each one's
// share, at its whole size: a principal's own churn takes it out of that principal's share only,
// and the store lets it go once it is in no one's. Nothing escapes a share by being used by
// someone else: every entry a principal uses counts, whole, against that principal's bounds.

export class PrincipalShares {
  /** Each principal's entries, least recently used first, and their bytes. */
  readonly #shares = new Map<string, { keys: Set<string>; bytes: number }>();
  /** Each kept entry's size and the principals whose shares hold it. */
  readonly #entries = new Map<string, { size: number; holders: Set<string> }>();

  constructor(
    private readonly bounds: { max: number; maxBytes: number },
    /** Takes the entry `key` out of the store (which then releases it here). */
    private readonly evict: (key: string) => void,
  ) {}

  /**
   * Charges the entry `key` of `size` to `principal`, as its most recently used, making room with
   * its own least recently used (see `resize` for a new size). The store keeps no entry larger than
   * `maxBytes`.
   */
  hold(principal: string, key: string, size: number): void {
    const entry = this.#entries.get(key);
    if (entry) this.resize(key, size, principal);
    else this.#entries.set(key, { size, holders: new Set<string>() });
    const share = this.#shares.get(principal) ?? { keys: new Set<string>(), bytes: 0 };
    this.#shares.set(principal, share);
    if (share.keys.delete(key)) share.bytes -= size;
    this.#entries.get(key)!.holders.add(principal);
    share.keys.add(key);
    share.bytes += size;
    this.#trim(principal, share, key);
  }

  /**
   * A kept entry weighs `size` now, in every share that holds it: each of those (but `except`'s,
   * which its caller trims) makes room with its own least recently used.
   */
  resize(key: string, size: number, except?: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    const grown = size - entry.size;
    entry.size = size;
    for (const holder of entry.holders) {
      const share = this.#shares.get(holder)!;
      share.bytes += grown;
      if (holder !== except) this.#trim(holder, share, key);
    }
  }

  /** The entry left the store: it is out of every share. */
  release(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    for (const holder of entry.holders) this.#leave(holder, key, entry.size);
  }

  /** A kept entry was used by `principal`: it is in its share too, as its most recently used. */
  used(principal: string, key: string): void {
    const entry = this.#entries.get(key);
    if (entry) this.hold(principal, key, entry.size);
  }

  /** Takes a share's least recently used entries, other than `key`, out of it until it is within bounds. */
  #trim(principal: string, share: { keys: Set<string>; bytes: number }, key: string): void {
    for (const oldest of share.keys) {
      if (share.keys.size <= this.bounds.max && share.bytes <= this.bounds.maxBytes) return;
      if (oldest === key) continue;
      const entry = this.#entries.get(oldest)!;
      entry.holders.delete(principal);
      this.#leave(principal, oldest, entry.size);
      // No one else uses it: it leaves the store (whose release finds it in no share).
      if (entry.holders.size === 0) {
        this.#entries.delete(oldest);
        this.evict(oldest);
      }
    }
  }

  #leave(principal: string, key: string, size: number): void {
    const share = this.#shares.get(principal);
    if (!share?.keys.delete(key)) return;
    share.bytes -= size;
    if (share.keys.size === 0) this.#shares.delete(principal);
  }
}
