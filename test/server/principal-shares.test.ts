// Each principal's share of a bounded store (server/principal-shares.ts): an entry several
// principals use is in each one's share, whole, and leaves the store only once no share holds it;
// no principal holds more than its bounds, whoever else uses its entries.
import { describe, expect, it } from "vitest";
import { PrincipalShares } from "../../src/server/principal-shares.js";

/** A store of entries kept by key, and the shares that bound it. */
function store(bounds = { max: 3, maxBytes: 100 }) {
  const kept = new Set<string>();
  const shares: PrincipalShares = new PrincipalShares(bounds, (key) => {
    kept.delete(key);
    shares.release(key);
  });
  const hold = (principal: string, key: string, size = 10) => {
    shares.hold(principal, key, size);
    kept.add(key);
  };
  return { kept, shares, hold };
}

describe("principal shares", () => {
  it("keeps an entry another principal still uses when one churns past it", () => {
    const { kept, shares, hold } = store();
    hold("other", "shared");
    shares.used("churner", "shared");
    for (const key of ["c1", "c2", "c3", "c4"]) hold("churner", key);
    expect([...kept].sort()).toEqual(["c2", "c3", "c4", "shared"]);
    // The other's own churn lets it go too: no one uses it now.
    for (const key of ["o1", "o2", "o3"]) hold("other", key);
    expect([...kept].sort()).toEqual(["c2", "c3", "c4", "o1", "o2", "o3"]);
  });

  it("counts an entry others use, whole, against each principal's bounds", () => {
    const { kept, shares, hold } = store();
    for (const key of ["a", "b", "c"]) hold("other", key);
    for (const key of ["a", "b", "c"]) shares.used("churner", key);
    hold("churner", "own");
    // The churner's share made room with its oldest (a), which the other still holds; it holds three.
    expect([...kept].sort()).toEqual(["a", "b", "c", "own"]);
    hold("churner", "own2");
    hold("churner", "own3");
    hold("churner", "own4");
    expect([...kept].sort()).toEqual(["a", "b", "c", "own2", "own3", "own4"]);
    // By bytes as well: an entry that grows makes room in its share with the share's own oldest.
    shares.resize("own4", 91);
    expect([...kept].sort()).toEqual(["a", "b", "c", "own4"]);
  });

  it("moves a used entry to the principal's most recently used, and releases it from every share once the store lets it go", () => {
    const { kept, shares, hold } = store();
    for (const key of ["a", "b", "c"]) hold("p", key);
    shares.used("q", "a");
    shares.used("p", "a");
    hold("p", "d");
    expect([...kept].sort()).toEqual(["a", "c", "d"]);
    shares.release("a");
    kept.delete("a");
    // Out of both shares: p has room for one more before its oldest (c) goes, q's share is empty.
    hold("p", "e");
    expect([...kept].sort()).toEqual(["c", "d", "e"]);
    shares.used("q", "a");
    hold("q", "x");
    expect([...kept].sort()).toEqual(["c", "d", "e", "x"]);
  });
});
