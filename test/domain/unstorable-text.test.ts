// findInvalidText walks lists and objects with a stack of its own: the first problem in order, at
// any depth it allows, and a refusal (not a stack overflow) past NESTING_MAX.
import { describe, expect, it } from "vitest";
import { findInvalidText, NESTING_MAX } from "../../src/domain/text/unstorable-text.js";

/** `inner` inside `levels` objects, each under the key "a". */
const nested = (levels: number, inner: unknown): unknown => {
  let value = inner;
  for (let i = 0; i < levels; i += 1) value = { a: value };
  return value;
};

describe("findInvalidText", () => {
  it("names the first problem in order, through lists and objects", () => {
    const value = { fine: ["ok", { deep: "ok" }], first: [1, "x\u0000"], second: "\uD800" };
    expect(findInvalidText(value, "input")).toEqual({ field: "input.first.1", problem: "nul" });
    expect(findInvalidText({ list: ["a", "b\uDC00", "\u0000"] })).toEqual({ field: "list.1", problem: "unpaired-surrogate" });
    expect(findInvalidText({ date: new Date(0), list: [], object: {}, text: "fine" })).toBeNull();
  });

  it("takes nesting up to NESTING_MAX and refuses one level more, naming where it goes too deep", () => {
    expect(findInvalidText(nested(NESTING_MAX, "x"))).toBeNull();
    expect(findInvalidText(nested(NESTING_MAX, "\u0000"))).toEqual({ field: Array<string>(NESTING_MAX).fill("a").join("."), problem: "nul" });
    expect(findInvalidText(nested(NESTING_MAX + 1, "x"))).toEqual({ field: Array<string>(NESTING_MAX).fill("a").join("."), problem: "too-deep" });
    // An empty list or object holds nothing deeper.
    expect(findInvalidText(nested(NESTING_MAX, {}))).toBeNull();
  });

  it("refuses 200,000 levels without overflowing the stack", () => {
    expect(findInvalidText(nested(200_000, "x"), "metadata")?.problem).toBe("too-deep");
    let list: unknown = "x";
    for (let i = 0; i < 200_000; i += 1) list = [list];
    expect(findInvalidText(list)?.field).toBe(Array<string>(NESTING_MAX).fill("0").join("."));
  });
});
