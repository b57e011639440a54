// Text a person decides on (a held call's tool name and arguments), with every character they
// would not see or would take for a plain space — bidi controls, zero-width and other format
// characters, control characters, blanks other than U+0020 — shown as its escape (\u202E), never
// removed; every word that mixes Latin, Greek and Cyrillic letters ("gіthub" with a Cyrillic і)
// after a ⚠, its title naming the letters that are not what they look like; its spaces as they
// are ("a  b" never reads "a b"); and every character left to right in the order it is stored
// (<bdo dir="ltr">), so that ordinary right-to-left letters cannot reorder the digits or words
// around them ("ח 4417 1234" never reads "1234 4417 ח"): what they read is what the call runs with.
import { hiddenCharacterEscape, MIXED_SCRIPT_MARK, mixedScriptNote, VISIBLE_PART } from "@dossier/sdk";
import type { ReactNode } from "react";

export function Visible({ text }: { text: string }) {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(VISIBLE_PART)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    const hex = (match[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
    parts.push(
      match[1] === undefined ? (
        <mark key={match.index} data-testid="mixed-script" title={mixedScriptNote(match[0])}>
          {MIXED_SCRIPT_MARK + match[0]}
        </mark>
      ) : (
        <mark key={match.index} data-testid="hidden-char" title={`U+${hex}, a character that is not shown as it is`}>
          {hiddenCharacterEscape(match[0])}
        </mark>
      ),
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return (
    <bdo dir="ltr" style={{ whiteSpace: "pre-wrap", overflowWrap: "anywhere" }}>
      {parts}
    </bdo>
  );
}
