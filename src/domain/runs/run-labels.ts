// A run's labels for finding it again: its tags (set at admission, changed by updateRunTags) and
// its metadata (a flat object of string values, set at admission: a client's own ids for the run).
//
// A tag or a metadata key is "visible" text: 1–64 characters (code points) after trimming, at
// least one of them visible (validation.ts: not only spaces, control or invisible format
// characters), and none of them a control (Cc) or format (Cf) character anywhere — a zero-width
// space or a direction mark would make two tags that read the same differ. Metadata values are any
// text PostgreSQL can store; the whole object is at most 32 keys and 8 KB of JSON.
import { z } from "zod";
import { hasVisibleCharacter } from "../validation.js";
import { groupedDigits } from "../text/grouped-digits.js";

export const TAGS_MAX = 20;
export const TAG_LENGTH_MAX = 64;
export const METADATA_KEYS_MAX = 32;
export const METADATA_BYTES_MAX = 8 * 1024;

/** Ends a key in a metadata pair; keys hold no control character, so the first one ends the key. */
export const PAIR_SEPARATOR = "\u001f";

const HIDDEN = /[\p{Cc}\p{Cf}]/u;

/** A tag or metadata key: trimmed, 1–64 characters, something visible, no control or format character. */
export const label = (what: "tag" | "key") =>
  z
    .string()
    .trim()
    .min(1, `a ${what} must not be empty`)
    .refine((value) => value === "" || hasVisibleCharacter(value), `a ${what} must contain a visible character`)
    // One problem at a time: a tag of zero-width spaces only is told it has nothing visible.
    .refine((value) => !hasVisibleCharacter(value) || !HIDDEN.test(value), `a ${what} must not contain control or invisible format characters`)
    .refine((value) => [...value].length <= TAG_LENGTH_MAX, `a ${what} must be at most ${TAG_LENGTH_MAX} characters`);

/** Tags as given, each once in the order first given (a tag given twice is one tag). */
export const tagList = z
  .array(label("tag"))
  .transform((tags) => [...new Set(tags)])
  .refine((tags) => tags.length <= TAGS_MAX, `at most ${TAGS_MAX} tags`);

/** A flat object of string values, at most 32 keys and 8 KB as JSON. */
export const metadataObject = z
  .custom<Record<string, unknown>>((value) => typeof value === "object" && value !== null && !Array.isArray(value), "must be an object of string values")
  .superRefine((value, ctx) => {
    const keys = Object.keys(value);
    if (keys.length > METADATA_KEYS_MAX) ctx.addIssue({ code: "custom", message: `at most ${METADATA_KEYS_MAX} keys` });
    for (const key of keys) {
      const parsed = label("key").safeParse(key);
      if (!parsed.success) ctx.addIssue({ code: "custom", path: [key], message: parsed.error.issues[0]!.message });
      else if (parsed.data !== key) ctx.addIssue({ code: "custom", path: [key], message: "a key must not start or end with white space" });
      if (typeof value[key] !== "string") ctx.addIssue({ code: "custom", path: [key], message: "must be a string (metadata is flat: string values only)" });
    }
    if (Buffer.byteLength(JSON.stringify(value), "utf8") > METADATA_BYTES_MAX) {
      ctx.addIssue({ code: "custom", message: `must be at most ${groupedDigits(METADATA_BYTES_MAX)} bytes as JSON` });
    }
  })
  .transform((value) => value as Record<string, string>);

/** The metadata's indexed form: one "key␟value" string per key (schema.prisma, Run.metadataPairs). */
export const metadataPairs = (metadata: Record<string, string>): string[] => Object.entries(metadata).map(([key, value]) => `${key}${PAIR_SEPARATOR}${value}`);

/**
 * The labels as an admission's idempotency fingerprint compares them: tags as a set, metadata by
 * key, so a retry that differs in either is an IdempotencyConflictError like any other differing
 * field. Only when given: keys stored before labels existed keep matching their requests.
 */
export function labelsFingerprint(request: { tags: string[]; metadata: Record<string, string> }): object {
  const metadata = Object.entries(request.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    ...(request.tags.length > 0 ? { tags: [...request.tags].sort() } : {}),
    ...(metadata.length > 0 ? { metadata } : {}),
  };
}
