// Finds text PostgreSQL cannot keep as given: `text` and `jsonb` reject U+0000, and a lone UTF-16
// surrogate (an unpaired code unit in \uD800–\uDFFF) has no UTF-8 form, so the driver silently
// turns it into U+FFFD. Input holding either is refused rather than stored differently from what
// the client sent. Proper surrogate pairs (astral characters such as emoji) are ordinary text.
import { firstProblem, itemsOf } from "../json-walk.js";

export type UnstorableProblem = "nul" | "unpaired-surrogate";

/** A value that cannot be stored as given: unstorable text, or lists and objects nested too deeply (NESTING_MAX). */
export type InvalidProblem = UnstorableProblem | "too-deep";

export type InvalidText = { field: string; problem: InvalidProblem };

// Any code unit that might be a problem. Proper pairs match too (the class sees code units, not
// code points); the scan below tells them apart. A plain class keeps the common case to one
// regex test per string.
const MAYBE_UNSTORABLE = /[\u0000\uD800-\uDFFF]/;

/** What, if anything, in the text PostgreSQL cannot store as is; the first problem wins. */
export function unstorableProblem(text: string): UnstorableProblem | null {
  if (!MAYBE_UNSTORABLE.test(text)) return null;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0) return "nul";
    if (code < 0xd800 || code > 0xdfff) continue;
    if (code >= 0xdc00) return "unpaired-surrogate"; // a low surrogate not ending a pair
    const next = text.charCodeAt(i + 1);
    if (!(next >= 0xdc00 && next <= 0xdfff)) return "unpaired-surrogate";
    i++; // a proper pair: skip its low half
  }
  return null;
}

/** Whether PostgreSQL can store the text exactly: no U+0000 and no unpaired surrogate. */
export function isStorableText(text: string): boolean {
  return unstorableProblem(text) === null;
}

/** The problem as a validation message about the field holding the text. */
export function describeUnstorable(problem: InvalidProblem): string {
  if (problem === "too-deep") return `is nested deeper than ${NESTING_MAX} levels of lists and objects`;
  return problem === "nul" ? "contains a NUL character (U+0000)" : "contains an unpaired UTF-16 surrogate";
}

/**
 * How deeply a value walked by findInvalidText may nest: lists and objects inside one another,
 * counted from the value walked (a field's arguments). Far past any input Dossier takes, and short
 * of what JSON.stringify (a RangeError past some thousands of levels) and PostgreSQL's jsonb
 * ("stack depth limit exceeded" past some tens of thousands, with its default max_stack_depth)
 * can handle: deeper input is refused rather than failing where it is written.
 */
export const NESTING_MAX = 100;

/**
 * The first string in `value` that cannot be stored, or the first list or object nested deeper
 * than NESTING_MAX, named by its dotted path from `path` (e.g. `input.materials.0.publicationId`).
 * Walks strings, arrays and plain objects (what GraphQL input coercion and JSON.parse make); any
 * other value, such as a Date, is not text. The walk keeps its own stack, depth first in order.
 */
export function findInvalidText(value: unknown, path = ""): InvalidText | null {
  const found = firstProblem(value, (item, depth): InvalidProblem | undefined => {
    if (typeof item === "string") return unstorableProblem(item) ?? undefined;
    if (typeof item !== "object" || item === null || depth < NESTING_MAX) return undefined;
    return itemsOf(item).length > 0 ? "too-deep" : undefined;
  });
  if (!found) return null;
  return { field: [...(path ? [path] : []), ...found.path].join("."), problem: found.problem };
}
