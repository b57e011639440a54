// What a person reads of a held call: every character they would not see shown as its escape.
import { describe, expect, it } from "vitest";
import { visibleText } from "../../sdk/visible-text.js";

describe("visibleText", () => {
  it("shows bidi controls, zero-width and format characters as escapes, and keeps tab, newline and letters", () => {
    expect(visibleText("a\u202Eb\u200Bc\uFEFF\u2066d\t\n\u0430")).toBe("a\\u202Eb\\u200Bc\\uFEFF\\u2066d\t\n\u0430");
    expect(visibleText("x\u{E0041}\uFE0F\u3164\u0007")).toBe("x\\u{E0041}\\uFE0F\\u3164\\u0007");
  });

  it("shows unassigned default-ignorable code points, which browsers draw as nothing", () => {
    expect(visibleText("comm\u2065and")).toBe("comm\\u2065and");
    expect(visibleText("a\uFFF0b\uFFF8c")).toBe("a\\uFFF0b\\uFFF8c");
    expect(visibleText("a\u{E0FFF}b\u{E0080}")).toBe("a\\u{E0FFF}b\\u{E0080}");
  });
});
