// Text a person decides on (a held call's tool name and arguments), with every character they
// would not see — bidi controls, zero-width and other format characters, control characters —
// shown as its escape (\u202E), never removed: what they read is what the call runs with.
import type { ReactNode } from "react";

const HIDDEN = /\u034F|[\p{Cf}\p{Variation_Selector}\u115F\u1160\u3164\uFFA0\u2028\u2029\p{Cc}]/gu;
const SHOWN_AS_IS = new Set(["\t", "\n"]);

export function Visible({ text }: { text: string }) {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(HIDDEN)) {
    if (SHOWN_AS_IS.has(match[0])) continue;
    if (match.index > last) parts.push(text.slice(last, match.index));
    const hex = (match[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
    parts.push(
      <mark key={match.index} data-testid="hidden-char" title={`U+${hex}, a character that is not shown`}>
        {hex.length > 4 ? `\\u{${hex}}` : `\\u${hex}`}
      </mark>,
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return <>{parts}</>;
}
