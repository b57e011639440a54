// Span ids. Every span a process starts takes its id here, whether it is written by one statement
// (span-statements.ts) or in a transaction (trace-writes.ts): ids of one process then sort in the
// order their spans started, which reads that order spans by start time and id rely on.
import { randomBytes } from "node:crypto";

let counter = 0;
/** Random bytes drawn 256 ids at a time: one call into the system's generator instead of one per id. */
const POOL_BYTES = 6 * 256;
let pool = Buffer.alloc(0);
let taken = POOL_BYTES;

/** Twelve random hexadecimal characters. */
function randomPart(): string {
  if (taken === POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    taken = 0;
  }
  taken += 6;
  return pool.toString("hex", taken - 6, taken);
}

/**
 * A new span id in the shape of the ids the ORM gives spans (a "c", the time, a counter, random
 * characters): later spans of a process sort after earlier ones, as reads that order by id expect.
 */
export function newSpanId(): string {
  counter = (counter + 1) % 1_679_616;
  return `c${Date.now().toString(36).padStart(8, "0")}${counter.toString(36).padStart(4, "0")}${randomPart()}`;
}
