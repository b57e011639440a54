// Live model output, in parts: the executing instance's coalescing and snapshots (StreamingCall),
// and a subscriber fitting frames and snapshots together exactly once (LiveCalls).
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunOutputFrame } from "../../src/events/topics.js";
import { StreamingCall } from "../../src/runtime/output/streaming-call.js";
import { LiveCalls } from "../../src/trace/output/live-calls.js";
import { withinBytes } from "../../src/trace/output/within-bytes.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("a streaming model call's output", () => {
  it("sends the first delta at once and coalesces the rest, at most one frame per 30 ms, with the call's last frame at its end", () => {
    vi.useFakeTimers();
    const frames: RunOutputFrame[] = [];
    const call = new StreamingCall({ runId: "r", spanId: "s", send: (frame) => frames.push(frame), now: () => Date.now() });
    for (let i = 0; i < 100; i += 1) call.report({ type: "text", delta: `t${i} ` });
    expect(frames).toEqual([{ runId: "r", spanId: "s", kind: "DELTA", parts: [{ toolCallId: null, offset: 0, text: "t0 " }], final: false }]);
    vi.advanceTimersByTime(29);
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(frames).toHaveLength(2);
    expect(frames[1]!.parts).toEqual([{ toolCallId: null, offset: 3, text: Array.from({ length: 99 }, (_, i) => `t${i + 1} `).join("") }]);
    call.report({ type: "tool_call_delta", index: 0, id: "call_a", delta: '{"q":' });
    call.report({ type: "tool_call_delta", index: 0, id: "call_a", delta: '"x"}' });
    // The whole call the model reports after streaming its arguments adds nothing.
    call.report({ type: "tool_call", index: 0, call: { id: "call_a", name: "search", arguments: '{"q":"x"}' } });
    call.end();
    expect(frames.at(-1)).toMatchObject({ final: true, parts: [{ toolCallId: "call_a", offset: 0, text: '{"q":"x"}' }] });
    expect(frames).toHaveLength(3);
    expect(call.snapshot()).toMatchObject({
      kind: "SNAPSHOT",
      final: true,
      parts: [
        { toolCallId: null, offset: 0 },
        { toolCallId: "call_a", text: '{"q":"x"}' },
      ],
    });
  });
});

describe("a subscriber's live calls", () => {
  const delta = (offset: number, text: string, final = false): RunOutputFrame => ({
    runId: "r",
    spanId: "s",
    kind: "DELTA",
    parts: [{ toolCallId: null, offset, text }],
    final,
  });

  it("holds pieces after a gap until the snapshot, which comes whole; overlaps are cut; nothing is delivered twice", () => {
    const calls = new LiveCalls();
    calls.expectSnapshot("s");
    expect(calls.place(delta(5, "fghij"))).toEqual([]);
    expect(calls.awaitingSnapshot()).toBe(true);
    expect(calls.complete("s")).toBe(false);
    const snapshot: RunOutputFrame = { runId: "r", spanId: "s", kind: "SNAPSHOT", parts: [{ toolCallId: null, offset: 0, text: "abcdefg" }], final: false };
    expect(calls.place(snapshot).map((piece) => piece.text)).toEqual(["abcdefg", "hij"]);
    expect(calls.place(delta(5, "fghij"))).toEqual([]);
    expect(calls.place(delta(10, "k", true)).map((piece) => piece.text)).toEqual(["k"]);
    expect(calls.complete("s")).toBe(true);
    calls.finish("s");
    expect(calls.place(delta(11, "late"))).toEqual([]);
  });

  it("ignores a snapshot it did not wait for", () => {
    const calls = new LiveCalls();
    const snapshot: RunOutputFrame = { runId: "r", spanId: "other", kind: "SNAPSHOT", parts: [{ toolCallId: null, offset: 0, text: "all" }], final: true };
    expect(calls.place(snapshot)).toEqual([]);
    expect(calls.complete("other")).toBe(true);
  });
});

describe("a piece of output within a byte budget", () => {
  it("is cut into consecutive pieces of at most the budget's UTF-8 bytes, never inside a surrogate pair", () => {
    const text = "aé€😀".repeat(30);
    const pieces = withinBytes(text, 9);
    expect(pieces.join("")).toBe(text);
    for (const piece of pieces) {
      expect(Buffer.byteLength(piece)).toBeLessThanOrEqual(9);
      expect(piece).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/);
    }
    // Each as long as it can be: the next piece's first character would take it past the budget.
    for (const [i, piece] of pieces.slice(0, -1).entries()) {
      const next = String.fromCodePoint(pieces[i + 1]!.codePointAt(0)!);
      expect(Buffer.byteLength(piece + next)).toBeGreaterThan(9);
    }
    expect(pieces).toHaveLength(40);
    expect(withinBytes("short", 64)).toEqual(["short"]);
  });
});
