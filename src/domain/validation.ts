import { z } from "zod";
import { ValidationError } from "./errors.js";
import { groupedDigits } from "./text/grouped-digits.js";

/** The longest title of a workspace, conversation, publication or artifact. */
export const TITLE_MAX = 200;

/** Parses input with a zod schema, turning every problem into one typed ValidationError. */
export function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown): z.output<Schema> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ValidationError(parsed.error.issues.map((issue) => ({ field: issue.path.join(".") || "input", message: issue.message })));
}

// Something a reader can see: not only spaces, control characters or invisible format
// characters (zero-width spaces, direction marks), which would make a title that reads as empty.
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Z}]/u;

/** Whether the text has something a reader can see (not only spaces, control or invisible format characters). */
export const hasVisibleCharacter = (text: string): boolean => VISIBLE.test(text);

/** Text a person wrote: trimmed, not empty, something visible in it, at most `max` characters. */
export const nonBlank = (max: number) =>
  z
    .string()
    .trim()
    .min(1, "must not be empty")
    .refine((value) => value === "" || VISIBLE.test(value), "must contain a visible character")
    .refine((value) => [...value].length <= max, `must be at most ${groupedDigits(max)} characters`);
