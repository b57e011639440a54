// The context builder's memo is bounded by the bytes it keeps alive, not by its entry count: a
// few hundred megabyte-sized tool results must not stay in memory after their runs ended.
import { describe, expect, it } from "vitest";
import type { LoggedMessage } from "../../src/runtime/ports/conversation-log.js";
import { MemoCache } from "../../src/runtime/memory/memo-cache.js";

const toolResult = (n: number, chars: number): LoggedMessage => ({
  id: `m${n}`,
  conversationId: "c",
  seq: n,
  role: "TOOL",
  content: String(n % 10).repeat(chars),
  toolCalls: null,
  toolCallId: `call_${n}`,
  toolName: "big",
  runId: "r",
  createdAt: new Date(0),
});

describe("the memo cache", () => {
  it("holds at most its byte bound, dropping the oldest entries first, and answers the same either way", () => {
    const maxBytes = 16 * 1024 * 1024;
    const cache = new MemoCache(undefined, 50_000, maxBytes);
    const first = cache.view(toolResult(0, 1_000_000));
    for (let n = 1; n < 100; n += 1) {
      cache.view(toolResult(n, 1_000_000));
      expect(cache.bytes).toBeLessThanOrEqual(maxBytes);
    }
    // 100 results of 2 MB each went through; about 8 fit.
    expect(cache.bytes).toBeGreaterThan(maxBytes / 2);
    const again = cache.view(toolResult(0, 1_000_000));
    expect(again.tokens).toBe(first.tokens);
    expect(again.chat).not.toBe(first.chat); // the oldest was evicted and computed anew
    expect(cache.view(toolResult(0, 1_000_000)).chat).toBe(again.chat); // and kept again
  });

  it("does not keep an entry larger than a quarter of its bound", () => {
    const cache = new MemoCache(undefined, 50_000, 4 * 1024 * 1024);
    const huge = toolResult(1, 1_000_000);
    expect(cache.view(huge).tokens).toBeGreaterThan(0);
    expect(cache.bytes).toBe(0);
  });
});
