// Span ids. Every span a process starts takes its id here, whether it is written by one statement
// (span-statements.ts) or in a transaction (trace-writes.ts): ids of one process then sort in the
// order their spans started, which reads that order spans by start time and id rely on.
import { randomBytes } from "node:crypto";

let counter = 0;
/**
 * A new span id in the shape of the ids the ORM gives spans (a "c", the time, a counter, random
 * characters): later spans of a process sort after earlier ones, as reads that order by id expect.
 */
export function newSpanId(): string {
  counter = (counter + 1) % 1_679_616;
  return `c${Date.now().toString(36).padStart(8, "0")}${counter.toString(36).padStart(4, "0")}${randomBytes(8).toString("hex").slice(0, 12)}`;
}
