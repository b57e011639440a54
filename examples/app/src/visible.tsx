// Text a person decides on (a held call's tool name and arguments), with every character they
// would not see — bidi controls, zero-width and other format characters, control characters —
// shown as its escape (\u202E), never removed, and every character left to right in the order it
// is stored (<bdo dir="ltr">), so that ordinary right-to-left letters cannot reorder the digits or
// words around them ("ח 4417 1234" never reads "1234 4417 ח"): what they read is what the call runs with.
import { HIDDEN_CHARACTER, hiddenCharacterEscape } from "@dossier/sdk";
import type { ReactNode } from "react";

export function Visible({ text }: { text: string }) {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(HIDDEN_CHARACTER)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    const hex = (match[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
    parts.push(
      <mark key={match.index} data-testid="hidden-char" title={`U+${hex}, a character that is not shown`}>
        {hiddenCharacterEscape(match[0])}
      </mark>,
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return <bdo dir="ltr">{parts}</bdo>;
}
