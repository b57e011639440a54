// Each principal's share of a bounded store that every principal's requests fill (automatic
// persisted queries' texts, parsed documents): a principal holds at most `max` entries and
// `maxBytes` of them, and a principal at its share makes room with its own least recently used
// entries, never another's. The store itself still evicts past its whole bounds, whoever's entry
// it is, and tells the share (`release`).

type Share = { sizes: Map<string, number>; bytes: number };

export class PrincipalShares {
  readonly #shares = new Map<string, Share>();
  readonly #owners = new Map<string, string>();

  constructor(
    private readonly bounds: { max: number; maxBytes: number },
    /** Takes the entry `key` out of the store (which then releases it here). */
    private readonly evict: (key: string) => void,
  ) {}

  /** Charges the entry `key` of `size` to `principal`, its most recently used, first evicting its own oldest past its share. */
  hold(principal: string, key: string, size: number): void {
    const share = this.#shares.get(principal) ?? { sizes: new Map<string, number>(), bytes: 0 };
    for (const oldest of share.sizes.keys()) {
      if (share.sizes.size < this.bounds.max && share.bytes + size <= this.bounds.maxBytes) break;
      this.evict(oldest);
    }
    // Set after making room: a share emptied by it has left the map.
    this.#shares.set(principal, share);
    this.#owners.set(key, principal);
    share.sizes.set(key, size);
    share.bytes += size;
  }

  /** The entry left the store: it is out of its principal's share. */
  release(key: string): void {
    const owner = this.#owners.get(key);
    const share = owner === undefined ? undefined : this.#shares.get(owner);
    const size = share?.sizes.get(key);
    this.#owners.delete(key);
    if (!share || size === undefined) return;
    share.sizes.delete(key);
    share.bytes -= size;
    if (share.sizes.size === 0) this.#shares.delete(owner!);
  }

  /** A kept entry was used by `principal`: it is now charged to it, as its most recently used. */
  used(principal: string, key: string): void {
    const owner = this.#owners.get(key);
    const size = owner === undefined ? undefined : this.#shares.get(owner)?.sizes.get(key);
    if (size === undefined) return;
    this.release(key);
    this.hold(principal, key, size);
  }

  /** The principal the entry is charged to, if it is kept. */
  ownerOf(key: string): string | undefined {
    return this.#owners.get(key);
  }
}
