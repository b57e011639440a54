import type { z } from "zod";
import { ValidationError } from "./errors.js";

/** Parses input with a zod schema, turning every problem into one typed ValidationError. */
export function parseInput<Schema extends z.ZodType>(schema: Schema, input: unknown): z.output<Schema> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ValidationError(
    parsed.error.issues.map((issue) => ({ field: issue.path.join(".") || "input", message: issue.message })),
  );
}
