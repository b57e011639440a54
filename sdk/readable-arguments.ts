// A held call's arguments as a person should read them before deciding: the values the tool gets,
// not the text the model wrote. A model can write `"\u0072\u006d -rf ~"` for "rm -rf ~", spread
// JSON over lines with carriage returns between them, or hide characters in its values; what a
// person reads is the arguments decoded (JSON.parse, as the call runs them) and written again as
// plain JSON, every character they would not see shown as its escape (visibleText), and how many
// of each kind there were (argumentWarnings). The stored arguments stay exactly as the model gave them.
import { VISIBLE_PART, visibleText } from "./visible-text.js";

export type ReadableArguments = {
  /** The arguments as the tool gets them, as JSON, each hidden character shown as its escape and each word that mixes scripts marked (visibleText). */
  text: string;
  /** Characters shown as escapes: invisible, format, bidi and control characters, blanks other than U+0020, marks stacked on one character. */
  hiddenCharacters: number;
  /** ASCII characters the model wrote as \u escapes (`\u0072` for `r`), which `text` shows decoded. */
  escapedCharacters: number;
};

// An escape in JSON text: `\uXXXX` (its hex in the group) or a one-character one (`\\`, `\"`, `\n`).
export const ARGUMENT_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|[^u])/g;

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

export function readableArguments(raw: string): ReadableArguments {
  const decoded = decodedArguments(raw);
  let hiddenCharacters = 0;
  for (const [part, hidden] of decoded.matchAll(VISIBLE_PART)) if (hidden !== undefined) hiddenCharacters += Array.from(part).length;
  let escapedCharacters = 0;
  if (decoded !== raw) {
    for (const [, hex] of raw.matchAll(ARGUMENT_ESCAPE)) {
      const code = hex === undefined ? -1 : Number.parseInt(hex, 16);
      if (code >= 0x20 && code <= 0x7e) escapedCharacters += 1;
    }
  }
  return { text: visibleText(decoded), hiddenCharacters, escapedCharacters };
}

/** What a person is told above the arguments, one sentence for each kind of character counted; none for plain arguments. */
export function argumentWarnings({ hiddenCharacters, escapedCharacters }: Pick<ReadableArguments, "hiddenCharacters" | "escapedCharacters">): string[] {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return [
    ...(hiddenCharacters > 0
      ? [
          `The arguments hold ${plural(hiddenCharacters, "hidden character")} (invisible, bidi, control or format characters, odd blanks, stacked marks): each is shown as its escape, such as \\u202E.`,
        ]
      : []),
    ...(escapedCharacters > 0
      ? [`The model wrote ${plural(escapedCharacters, "plain character")} as \\u escapes (\\u0072 for r): shown decoded, as the tool gets them.`]
      : []),
  ];
}
