// A held call's arguments as a person should read them before deciding: the values the tool gets,
// not the text the model wrote. A model can write `"\u0072\u006d -rf ~"` for "rm -rf ~", spread
// JSON over lines with carriage returns between them, hide characters in its values, push the
// end of a command out of view with a long run of blanks, or write a ⚠ of its own to forge one of
// Dossier's marks; what a person reads is the arguments decoded (JSON.parse, as the call runs them)
// and written again as plain JSON, every character they would not see shown as its escape
// (visibleText), every long run of blanks shown as its count (⚠[40 spaces]), and how many of each
// kind there were (argumentWarnings). The stored arguments stay exactly as the model gave them.
import { MIXED_SCRIPT_MARK, VISIBLE_PART, visibleText } from "./visible-text.js";

export type ReadableArguments = {
  /** The arguments as the tool gets them, as JSON, each hidden character shown as its escape, each word that mixes scripts marked (visibleText), each long run of blanks as its count. */
  text: string;
  /** Characters shown as escapes: invisible, format, bidi and control characters, blanks other than U+0020, unassigned and private-use code points, marks stacked on one character. */
  hiddenCharacters: number;
  /** ASCII characters the model wrote as \u escapes (`\u0072` for `r`), which `text` shows decoded. */
  escapedCharacters: number;
  /** Runs of more than BLANK_RUN_LENGTH blanks (spaces, tabs, line breaks), each shown as its count (⚠[40 spaces]). */
  blankRuns: number;
  /** ⚠ signs the arguments hold themselves, each shown as its escape (\u26A0): every ⚠ in `text` is Dossier's mark. */
  warningSigns: number;
  /** Words that mix Latin, Greek and Cyrillic letters, each shown after a ⚠. */
  mixedScriptWords: number;
};

// An escape in JSON text: `\uXXXX` (its hex in the group) or a one-character one (`\\`, `\"`, `\n`).
export const ARGUMENT_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|[^u])/g;

/** A run of more blanks than this is shown as its count: more would push what follows out of view. */
export const BLANK_RUN_LENGTH = 32;

/**
 * In the arguments as JSON: an escaped backslash, passed over so that `\\n` is not read as a line
 * break, or (its group) a run of more than BLANK_RUN_LENGTH blanks: spaces, and tabs and line breaks
 * as JSON writes them in a value (\t, \n, \r) or as text that is not JSON holds them.
 */
export const BLANK_RUN = new RegExp(String.raw`\\\\|((?:\\[tnr]|[ \t\n\r]){${BLANK_RUN_LENGTH + 1},})`, "g");

/** Each blank of a run, as JSON writes it or as it is, and what it is called. */
export const BLANK_NAMES: Readonly<Record<string, string>> = {
  " ": "space",
  "\t": "tab",
  "\\t": "tab",
  "\n": "line break",
  "\\n": "line break",
  "\r": "carriage return",
  "\\r": "carriage return",
};

/** A run of blanks as a person reads it: how many of each kind, after a ⚠ (`⚠[38 spaces, 2 line breaks]`). */
export function blankRunMark(run: string): string {
  const counts = new Map<string, number>(["space", "tab", "line break", "carriage return"].map((name) => [name, 0]));
  for (const [blank] of run.matchAll(/\\[tnr]|[ \t\n\r]/g)) {
    const name = BLANK_NAMES[blank]!;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const kinds = [...counts].filter(([, n]) => n > 0).map(([name, n]) => `${n} ${name}${n === 1 ? "" : "s"}`);
  return `${MIXED_SCRIPT_MARK}[${kinds.join(", ")}]`;
}

/**
 * The arguments as the call runs them, as JSON: `{}` for none, the model's text itself when it is
 * not JSON (a call recorded before such calls were refused).
 */
export function decodedArguments(raw: string): string {
  if (raw.trim() === "") return "{}";
  try {
    return JSON.stringify(JSON.parse(raw));
  } catch {
    return raw;
  }
}

/**
 * The arguments as the call runs them (decodedArguments) in pieces: text to show with visibleText,
 * and each long run of blanks (BLANK_RUN) as the mark shown instead (blankRunMark).
 */
export function argumentPieces(raw: string): { text: string; blankRun: boolean }[] {
  const decoded = decodedArguments(raw);
  const pieces: { text: string; blankRun: boolean }[] = [];
  let last = 0;
  for (const match of decoded.matchAll(BLANK_RUN)) {
    if (match[1] === undefined) continue;
    if (match.index > last) pieces.push({ text: decoded.slice(last, match.index), blankRun: false });
    pieces.push({ text: blankRunMark(match[1]), blankRun: true });
    last = match.index + match[0].length;
  }
  if (last < decoded.length || pieces.length === 0) pieces.push({ text: decoded.slice(last), blankRun: false });
  return pieces;
}

export function readableArguments(raw: string): ReadableArguments {
  const pieces = argumentPieces(raw);
  let hiddenCharacters = 0;
  let blankRuns = 0;
  let warningSigns = 0;
  let mixedScriptWords = 0;
  for (const piece of pieces) {
    if (piece.blankRun) {
      blankRuns += 1;
      continue;
    }
    for (const [part, hidden] of piece.text.matchAll(VISIBLE_PART)) {
      if (hidden === undefined) mixedScriptWords += 1;
      else if (part === MIXED_SCRIPT_MARK) warningSigns += 1;
      else hiddenCharacters += Array.from(part).length;
    }
  }
  let escapedCharacters = 0;
  if (decodedArguments(raw) !== raw) {
    for (const [, hex] of raw.matchAll(ARGUMENT_ESCAPE)) {
      const code = hex === undefined ? -1 : Number.parseInt(hex, 16);
      if (code >= 0x20 && code <= 0x7e) escapedCharacters += 1;
    }
  }
  const text = pieces.map((piece) => (piece.blankRun ? piece.text : visibleText(piece.text))).join("");
  return { text, hiddenCharacters, escapedCharacters, blankRuns, warningSigns, mixedScriptWords };
}

type Counts = Omit<ReadableArguments, "text">;

/** What a person is told above the arguments, one sentence for each kind counted; none for plain arguments. */
export function argumentWarnings({ hiddenCharacters, escapedCharacters, blankRuns, warningSigns, mixedScriptWords }: Counts): string[] {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const warnings: string[] = [];
  if (hiddenCharacters > 0) {
    warnings.push(
      `The arguments hold ${plural(hiddenCharacters, "hidden character")} (invisible, bidi, control or format characters, odd blanks, stacked marks): each is shown as its escape, such as \\u202E.`,
    );
  }
  if (escapedCharacters > 0) {
    warnings.push(`The model wrote ${plural(escapedCharacters, "plain character")} as \\u escapes (\\u0072 for r): shown decoded, as the tool gets them.`);
  }
  if (blankRuns > 0) {
    warnings.push(
      `The arguments hold ${plural(blankRuns, "long run")} of blanks (spaces, tabs, line breaks), which could push what follows out of view: each is shown as its count, such as ⚠[40 spaces].`,
    );
  }
  if (warningSigns > 0) {
    warnings.push(
      `The arguments hold ${plural(warningSigns, "⚠ sign")} of their own: each is shown as its escape, \\u26A0, so every ⚠ shown is Dossier's mark.`,
    );
  }
  if (mixedScriptWords > 0) {
    warnings.push(
      `The arguments hold ${plural(mixedScriptWords, "word")} that ${mixedScriptWords === 1 ? "mixes" : "mix"} Latin, Greek and Cyrillic letters, which can look alike: each is shown after a ⚠.`,
    );
  }
  return warnings;
}
