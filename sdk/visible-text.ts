// Text a person decides on (a held call's tool name and arguments) as they should read it: every
// character they would not see, or that changes how the text around it reads, shown as its escape
// (\u202E), never removed and never applied, and every word that mixes Latin, Greek and Cyrillic
// letters (which can look alike: "gіthub" with a Cyrillic і) marked. The trace viewer, the example
// app and the MCP server show held calls through these; the text itself (what is stored, what
// runs) is never changed.

/**
 * Characters a person does not see, or sees as a plain space, that change how the text around them
 * reads: bidi embeddings, overrides, isolates and marks (U+202A–202E, U+2066–2069, U+200E/200F,
 * U+061C), zero-width characters and U+FEFF, every other format character (tag characters among
 * them), variation selectors, invisible fillers (U+3164, U+115F/1160, U+FFA0), line and paragraph
 * separators, control characters other than tab and newline, every default-ignorable code point
 * (unassigned ones among them: U+2065, U+FFF0–FFF8, most of U+E0000–E0FFF), which browsers draw as
 * nothing, and the blanks that are not U+0020: every other space separator (no-break, en, em, thin,
 * ideographic spaces …) and the Braille blank U+2800, which read as a space but are not one;
 * private-use characters, which a font may draw as any letter, or as nothing; and every code point
 * Unicode has not assigned (U+0378, the noncharacters U+FDD0–FDEF and U+FFFE/FFFF) and every lone
 * surrogate, which a font draws as a box, a blank or nothing, and which may mean something later.
 */
export const HIDDEN_CHARACTER =
  /\u034F|(?![\t\n])\p{Cc}|(?! )\p{Zs}|[\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Variation_Selector}\p{Default_Ignorable_Code_Point}\u115F\u1160\u3164\uFFA0\u2028\u2029\u2800]/gu;

/**
 * Combining marks stacked on one character, four or more: drawn above and below the line, they
 * cover the text around them (a command's next word, the line above). Scripts that stack marks
 * (Vietnamese, pointed Hebrew, Devanagari) put at most three on a letter.
 */
export const MARK_STACK = /\p{M}{4,}/gu;

// A letter of a word: letters, digits and marks that are shown (not default-ignorable), a mark only
// outside a stack (MARK_STACK), which is shown as escapes of its own.
const LETTER = String.raw`(?:(?!\p{Default_Ignorable_Code_Point})(?:[\p{L}\p{N}]|\p{M}(?!\p{M}{3})))`;
// A word or a host: letters, joined by single dots and hyphens ("gіthub", "аррӏе.com", "x-1.y").
const PART = String.raw`(?:${LETTER}|[.\-](?=${LETTER}))`;
const HAS = (script: string) => String.raw`(?=${PART}*\p{Script=${script}})`;

/**
 * A word or host that mixes Latin, Greek and Cyrillic letters, which can look alike ("gіthub" with
 * a Cyrillic і, "аррӏе.com"). A word of one script ("café", "пример", "λόγος", "東京") is not one.
 * Tried at a word's start only (never inside one), so it reads the text in linear time.
 */
export const MIXED_SCRIPT_WORD = new RegExp(
  String.raw`(?<!${LETTER}|${LETTER}[.\-])(?:${HAS("Latin")}(?=${PART}*[\p{Script=Greek}\p{Script=Cyrillic}])|${HAS("Greek")}${HAS("Cyrillic")})${LETTER}${PART}*`,
  "gu",
);

/**
 * Shown before a word that mixes scripts, and before a run of blanks shown as its count
 * (readable-arguments.ts). Text that holds one itself has it shown as its escape, \u26A0
 * (VISIBLE_PART), so a ⚠ a person reads is always Dossier's: a model can neither forge a mark
 * nor make a real one look like the text around it.
 */
export const MIXED_SCRIPT_MARK = "⚠";

/**
 * What visibleText shows otherwise: a hidden character, a stack of marks or a ⚠ of the text's own
 * (its first group, each shown as its escape), or a word that mixes scripts (shown after a ⚠).
 */
export const VISIBLE_PART = new RegExp(`(${HIDDEN_CHARACTER.source}|${MARK_STACK.source}|${MIXED_SCRIPT_MARK})|${MIXED_SCRIPT_WORD.source}`, "gu");

/** How a hidden character is shown: `\u202E`, or `\u{E0041}` past U+FFFF; a stack of marks, each of its marks so. */
export function hiddenCharacterEscape(characters: string): string {
  return Array.from(characters, (character) => {
    const hex = (character.codePointAt(0) ?? 0).toString(16).toUpperCase();
    return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
  }).join("");
}

const SCRIPTS = [
  ["Latin", /\p{Script=Latin}/u],
  ["Greek", /\p{Script=Greek}/u],
  ["Cyrillic", /\p{Script=Cyrillic}/u],
] as const;

/**
 * Why a word is marked (MIXED_SCRIPT_WORD), naming its letters of other scripts than its first:
 * `"gіthub" mixes Latin and Cyrillic letters, which can look alike: і (U+0456) is not Latin`.
 */
export function mixedScriptNote(word: string): string {
  const present = SCRIPTS.filter(([, script]) => script.test(word));
  const first = present[0]!;
  const others = [...new Set([...word].filter((c) => !first[1].test(c) && present.some(([, script]) => script.test(c))))];
  const letters = others.map((c) => `${c} (U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")})`);
  const names = present.map(([name]) => name);
  return `"${word}" mixes ${names.slice(0, -1).join(", ")} and ${names.at(-1)} letters, which can look alike: ${letters.join(", ")} ${others.length > 1 ? "are" : "is"} not ${first[0]}`;
}

/**
 * `text` for a person to read: each hidden character (HIDDEN_CHARACTER), each mark of a stack
 * (MARK_STACK) and each ⚠ of its own replaced by its escape,
 * each word that mixes scripts (MIXED_SCRIPT_WORD) after a ⚠ (MIXED_SCRIPT_MARK).
 */
export function visibleText(text: string): string {
  return text.replace(VISIBLE_PART, (part, hidden?: string) => (hidden === undefined ? MIXED_SCRIPT_MARK + part : hiddenCharacterEscape(part)));
}

/** Why each word of `text` that mixes scripts is marked (mixedScriptNote), each word once. */
export function mixedScriptNotes(text: string): string[] {
  return [...new Set(Array.from(text.matchAll(MIXED_SCRIPT_WORD), (match) => match[0]))].map(mixedScriptNote);
}
