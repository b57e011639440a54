// Timestamps read straight from PostgreSQL (direct-statements.ts) parsed without node-postgres's
// regular expressions: a session in UTC sends every `timestamptz` as `YYYY-MM-DD HH:MM:SS[.ffffff]+00`,
// which this reads by position (node-postgres's parser was about 3 % of a typical workspace
// read's CPU, twenty-odd timestamps a read). Anything else — another time zone, a year before
// 1000 or after 9999, BC, infinity — goes to node-postgres's own parser, so every value comes
// back as it would have.
import pg from "pg";

const TIMESTAMPTZ = 1184;
const defaultParser = pg.types.getTypeParser(TIMESTAMPTZ, "text") as (value: string) => unknown;

/** Where the year, month, day, hours, minutes and seconds have their digits. */
const DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
const digit = (text: string, at: number) => text.charCodeAt(at) - 48;
const two = (text: string, at: number) => digit(text, at) * 10 + digit(text, at + 1);

/** A UTC `timestamptz` in PostgreSQL's ISO output as a Date, as node-postgres's parser gives it. */
export function parseTimestamptz(text: string): unknown {
  const length = text.length;
  // "2026-12-04 20:31:00+00" is 22 characters; with a fraction of 1 to 6 digits, 24 to 29.
  if (length < 22 || length > 29 || length === 23 || text.charCodeAt(length - 3) !== 43 /* + */ || text[length - 2] !== "0" || text[length - 1] !== "0") {
    return defaultParser(text);
  }
  if (text[4] !== "-" || text[7] !== "-" || text[10] !== " " || text[13] !== ":" || text[16] !== ":" || digit(text, 0) < 1) return defaultParser(text);
  for (const at of DIGITS) {
    const d = digit(text, at);
    if (d < 0 || d > 9) return defaultParser(text);
  }
  let ms = 0;
  if (length > 22) {
    if (text[19] !== ".") return defaultParser(text);
    for (let at = 20; at < length - 3; at++) {
      const d = digit(text, at);
      if (d < 0 || d > 9) return defaultParser(text);
    }
    // Milliseconds: the fraction's first three digits (node-postgres drops the microseconds too).
    for (let at = 20, scale = 100; at < length - 3 && at < 23; at++, scale /= 10) ms += digit(text, at) * scale;
  }
  return new Date(Date.UTC(two(text, 0) * 100 + two(text, 2), two(text, 5) - 1, two(text, 8), two(text, 11), two(text, 14), two(text, 17), ms));
}

/** node-postgres's parsers with `parseTimestamptz` for `timestamptz`: a query's `types`. */
export const directTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === TIMESTAMPTZ && format !== "binary" ? parseTimestamptz : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};
