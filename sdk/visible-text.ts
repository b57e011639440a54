// Text a person decides on (a held call's tool name and arguments) as they should read it: every
// character they would not see, or that changes how the text around it reads, shown as its escape
// (\u202E), never removed and never applied. The trace viewer, the example app and the MCP server
// show held calls through these; the text itself (what is stored, what runs) is never changed.

/**
 * Characters a person does not see that change how the text around them reads: bidi embeddings,
 * overrides, isolates and marks (U+202A–202E, U+2066–2069, U+200E/200F, U+061C), zero-width
 * characters and U+FEFF, every other format character (tag characters among them), variation
 * selectors, invisible fillers, line and paragraph separators, control characters other than
 * tab and newline, and every default-ignorable code point (unassigned ones among them: U+2065,
 * U+FFF0–FFF8, most of U+E0000–E0FFF), which browsers draw as nothing.
 */
export const HIDDEN_CHARACTER = /\u034F|(?![\t\n])\p{Cc}|[\p{Cf}\p{Variation_Selector}\p{Default_Ignorable_Code_Point}\u115F\u1160\u3164\uFFA0\u2028\u2029]/gu;

/** How a hidden character is shown: `\u202E`, or `\u{E0041}` past U+FFFF. */
export function hiddenCharacterEscape(character: string): string {
  const hex = (character.codePointAt(0) ?? 0).toString(16).toUpperCase();
  return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
}

/** `text` with each hidden character (HIDDEN_CHARACTER) replaced by its escape, for a person to read. */
export function visibleText(text: string): string {
  return text.replace(HIDDEN_CHARACTER, hiddenCharacterEscape);
}
