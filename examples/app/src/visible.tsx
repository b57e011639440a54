// Text a person decides on (a held call's tool name and arguments), with every character they
// would not see or would take for a plain space — bidi controls, zero-width and other format
// characters, control characters, blanks other than U+0020, unassigned and private-use code
// points — shown as its escape (\u202E), never removed; a ⚠ the text holds itself shown as its
// escape (\u26A0), so every ⚠ shown is the app's mark; every word that mixes Latin, Greek and
// Cyrillic letters ("gіthub" with a Cyrillic і) after a ⚠, its title naming the letters that are
// not what they look like; its spaces as they are ("a  b" never reads "a b"); and every character
// left to right in the order it is stored (<bdo dir="ltr">), so that ordinary right-to-left
// letters cannot reorder the digits or words around them ("ח 4417 1234" never reads
// "1234 4417 ח"): what they read is what the call runs with.
import { argumentPieces, hiddenCharacterEscape, MIXED_SCRIPT_MARK, mixedScriptNote, VISIBLE_PART } from "@dossier/sdk";
import type { ReactNode } from "react";

function visibleParts(text: string, key: string): ReactNode[] {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(VISIBLE_PART)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    const hex = (match[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
    parts.push(
      match[1] === undefined ? (
        <mark key={`${key}.${match.index}`} data-testid="mixed-script" title={mixedScriptNote(match[0])}>
          {MIXED_SCRIPT_MARK + match[0]}
        </mark>
      ) : (
        <mark key={`${key}.${match.index}`} data-testid="hidden-char" title={`U+${hex}, a character that is not shown as it is`}>
          {hiddenCharacterEscape(match[0])}
        </mark>
      ),
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

function AsStored({ children }: { children: ReactNode }) {
  return (
    <bdo dir="ltr" style={{ whiteSpace: "pre-wrap", overflowWrap: "anywhere" }}>
      {children}
    </bdo>
  );
}

export function Visible({ text }: { text: string }) {
  return <AsStored>{visibleParts(text, "v")}</AsStored>;
}

/**
 * A call's arguments as the tool gets them (the SDK's argumentPieces: `\u0072\u006d` reads rm),
 * each long run of blanks, which would push what follows out of view, as its count
 * (⚠[40 spaces]), the rest as Visible shows it: ToolApproval.readableArguments.text, marked.
 */
export function ReadableArguments({ raw }: { raw: string }) {
  const parts: ReactNode[] = [];
  let at = 0; // where the piece starts in what is shown: each part's key
  for (const piece of argumentPieces(raw)) {
    parts.push(
      piece.blankRun ? (
        <mark key={`b${at}`} data-testid="blank-run" title="A run of blanks, shown as its count">
          {piece.text}
        </mark>
      ) : (
        visibleParts(piece.text, `t${at}`)
      ),
    );
    at += piece.text.length;
  }
  return <AsStored>{parts}</AsStored>;
}
