// What a person reads of a held call's arguments before deciding (readableArguments): nothing the
// model wrote can push the dangerous part out of view, hide a character in a key, or forge one of
// Dossier's marks.
import { describe, expect, it } from "vitest";
import { argumentWarnings, readableArguments } from "../../sdk/readable-arguments.js";
import { visibleText } from "../../sdk/visible-text.js";

const counts = { hiddenCharacters: 0, escapedCharacters: 0, blankRuns: 0, warningSigns: 0, mixedScriptWords: 0 };

describe("readableArguments", () => {
  it("shows a long run of blanks as its count, so that what follows stays in view", () => {
    const raw = JSON.stringify({ command: `echo ok${" ".repeat(200)}; rm -rf ~` });
    expect(readableArguments(raw)).toEqual({ ...counts, text: '{"command":"echo ok⚠[200 spaces]; rm -rf ~"}', blankRuns: 1 });
    // Line breaks and tabs, as JSON writes them in a value, count as blanks too, each kind told.
    const lines = JSON.stringify({ command: `ls${"\n".repeat(30)}\t\t${" ".repeat(5)}rm -rf ~`, b: " ".repeat(40) });
    expect(readableArguments(lines)).toEqual({
      ...counts,
      text: '{"command":"ls⚠[5 spaces, 2 tabs, 30 line breaks]rm -rf ~","b":"⚠[40 spaces]"}',
      blankRuns: 2,
    });
    // Whitespace between values is gone once decoded, whatever its length.
    expect(readableArguments(`{"a":${" ".repeat(100)}"b"}`)).toEqual({ ...counts, text: '{"a":"b"}' });
  });

  it("keeps a run of up to 32 blanks, and a backslash followed by n, as they are", () => {
    const code = JSON.stringify({ code: `if x:\n${" ".repeat(31)}y` });
    expect(readableArguments(code).text).toBe(code);
    // A backslash written as such, then "n": no line break, no run.
    const slashes = JSON.stringify({ path: "\\n".repeat(40) });
    expect(readableArguments(slashes)).toEqual({ ...counts, text: slashes });
  });

  it("shows a ⚠ the arguments hold as its escape and counts it: a model cannot forge a mark", () => {
    // Written plainly, or as an escape, a ⚠ of the model's own never reads as Dossier's.
    for (const raw of ['{"note":"⚠[40 spaces] rm -rf ~"}', String.raw`{"note":"\u26a0[40 spaces] rm -rf ~"}`]) {
      expect(readableArguments(raw)).toMatchObject({ text: String.raw`{"note":"\u26A0[40 spaces] rm -rf ~"}`, warningSigns: 1, hiddenCharacters: 0 });
    }
    // Nor can an escape it writes as text pass for one of Dossier's: its backslash shows doubled.
    expect(readableArguments(JSON.stringify({ note: "\\u202E" })).text).toBe(String.raw`{"note":"\\u202E"}`);
    expect(visibleText("deploy ⚠")).toBe("deploy \\u26A0");
  });

  it("shows hidden characters in keys as in values", () => {
    expect(readableArguments('{"\u202Ecommand":"ls","a\u200B":1}')).toEqual({
      ...counts,
      text: String.raw`{"\u202Ecommand":"ls","a\u200B":1}`,
      hiddenCharacters: 2,
    });
  });

  it("shows unassigned code points, noncharacters and private-use characters as escapes, and counts them", () => {
    expect(readableArguments('{"a":"x\u0378y\uFDD0z\uFFFF","b":"\uE000\u{F0000}"}')).toEqual({
      ...counts,
      text: String.raw`{"a":"x\u0378y\uFDD0z\uFFFF","b":"\uE000\u{F0000}"}`,
      hiddenCharacters: 5,
    });
  });

  it("counts each word that mixes scripts", () => {
    expect(readableArguments('{"url":"https://g\u0456thub.com","b":"p\u0430ypal"}')).toEqual({
      ...counts,
      text: '{"url":"https://⚠g\u0456thub.com","b":"⚠p\u0430ypal"}',
      mixedScriptWords: 2,
    });
  });
});

describe("argumentWarnings", () => {
  it("tells a person of each kind counted, and of nothing for plain arguments", () => {
    expect(argumentWarnings(counts)).toEqual([]);
    expect(argumentWarnings({ ...counts, blankRuns: 2, warningSigns: 1, mixedScriptWords: 1 })).toEqual([
      "The arguments hold 2 long runs of blanks (spaces, tabs, line breaks), which could push what follows out of view: each is shown as its count, such as ⚠[40 spaces].",
      "The arguments hold 1 ⚠ sign of their own: each is shown as its escape, \\u26A0, so every ⚠ shown is Dossier's mark.",
      "The arguments hold 1 word that mixes Latin, Greek and Cyrillic letters, which can look alike: each is shown after a ⚠.",
    ]);
  });
});
