// The trace update cache that subscribers of one update share is bounded by the bytes it keeps,
// not only by its entry count: a burst of large updates (full payloads) must not stay in memory.
import { describe, expect, it } from "vitest";
import { UpdateCache } from "../../src/trace/updates/update-cache.js";

const payload = (n: number, chars: number) => ({ seq: String(n), type: "EVENT_APPENDED", payload: String(n % 10).repeat(chars) });
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the trace update cache", () => {
  it("keeps at most its byte bound once loads settle, the most recent entries first, and still shares one load", async () => {
    const maxBytes = 8 * 1024 * 1024;
    const cache = new UpdateCache({ maxBytes, maxEntries: 10_000 });
    let loads = 0;
    const load = (n: number) => async () => {
      loads += 1;
      return payload(n, 500_000); // about 1 MB each
    };
    for (let n = 0; n < 100; n += 1) {
      await cache.read(`update:${n}`, load(n));
      await settle();
      expect(cache.bytes).toBeLessThanOrEqual(maxBytes);
    }
    // 100 updates of about 1 MB went through; only the last few are kept.
    expect(cache.bytes).toBeGreaterThan(maxBytes / 2);
    expect(loads).toBe(100);
    await cache.read("update:99", load(99));
    expect(loads).toBe(100); // the latest is still shared
    await cache.read("update:0", load(0));
    expect(loads).toBe(101); // the oldest was dropped and is read again
  });

  it("shares a load among concurrent readers, and keeps no entry larger than a quarter of its bound", async () => {
    const cache = new UpdateCache({ maxBytes: 4 * 1024 * 1024 });
    let loads = 0;
    const huge = async () => {
      loads += 1;
      return payload(1, 2_000_000); // about 4 MB
    };
    const [a, b] = await Promise.all([cache.read("huge", huge), cache.read("huge", huge)]);
    expect(a).toBe(b);
    expect(loads).toBe(1);
    await settle();
    expect(cache.bytes).toBe(0);
    await cache.read("huge", huge);
    expect(loads).toBe(2);
  });

  it("forgets a load that failed, so the next reader tries again", async () => {
    const cache = new UpdateCache();
    await expect(cache.read("k", async () => Promise.reject(new Error("the database did not answer")))).rejects.toThrow("did not answer");
    await settle();
    expect(await cache.read("k", async () => "read")).toBe("read");
  });
});
