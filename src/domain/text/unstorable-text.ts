// Finds text PostgreSQL cannot keep as given: `text` and `jsonb` reject U+0000, and a lone UTF-16
// surrogate (an unpaired code unit in \uD800–\uDFFF) has no UTF-8 form, so the driver silently
// turns it into U+FFFD. Input holding either is refused rather than stored differently from what
// the client sent. Proper surrogate pairs (astral characters such as emoji) are ordinary text.

export type UnstorableProblem = "nul" | "unpaired-surrogate";

export type InvalidText = { field: string; problem: UnstorableProblem };

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
export function describeUnstorable(problem: UnstorableProblem): string {
  return problem === "nul" ? "contains a NUL character (U+0000)" : "contains an unpaired UTF-16 surrogate";
}

/**
 * The first string in `value` that cannot be stored, named by its dotted path from `path`
 * (e.g. `input.materials.0.publicationId`). Walks strings, arrays and plain objects (what
 * GraphQL input coercion and JSON.parse make); any other value, such as a Date, is not text.
 */
export function findInvalidText(value: unknown, path = ""): InvalidText | null {
  if (typeof value === "string") {
    const problem = unstorableProblem(value);
    return problem ? { field: path, problem } : null;
  }
  if (typeof value !== "object" || value === null) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findInvalidText(value[i], join(path, String(i)));
      if (found) return found;
    }
    return null;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return null;
  for (const key of Object.keys(value)) {
    const found = findInvalidText((value as Record<string, unknown>)[key], join(path, key));
    if (found) return found;
  }
  return null;
}

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);
