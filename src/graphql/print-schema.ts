import { lexicographicSortSchema, printSchema } from "graphql";
import { schema } from "./schema.js";

/** The SDL as committed at schema/schema.graphql: sorted, so diffs show real changes only. */
export function printSortedSchema(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
