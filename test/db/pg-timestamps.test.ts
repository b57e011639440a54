// Timestamps read straight from PostgreSQL are parsed by position (pg-timestamps.ts): every text
// PostgreSQL may send must come back as node-postgres's own parser gives it, the ordinary UTC
// form and every other (time zones, short fractions, far years, BC, infinity).
import pg from "pg";
import { describe, expect, it } from "vitest";
import { parseTimestamptz } from "../../src/db/pg-timestamps.js";

const reference = pg.types.getTypeParser(1184, "text") as (text: string) => unknown;
const same = (text: string) => expect([text, parseTimestamptz(text)]).toEqual([text, reference(text)]);

describe("timestamps read straight from PostgreSQL", () => {
  it("parse every fraction length of the UTC form as node-postgres does", () => {
    for (const text of [
      "2026-12-04 20:31:00+00",
      "2026-12-04 20:31:00.1+00",
      "2026-12-04 20:31:00.12+00",
      "2026-12-04 20:31:00.123+00",
      "2026-12-04 20:31:00.1234+00",
      "2026-12-04 20:31:00.123456+00",
      "2026-12-04 20:31:00.999999+00",
      "2024-02-29 23:59:59.000001+00",
      "1000-01-01 00:00:00+00",
      "9999-12-31 23:59:59.999999+00",
    ]) {
      same(text);
    }
  });

  it("parse thousands of random instants as node-postgres does", () => {
    for (let i = 0; i < 5_000; i++) {
      const at = new Date(Date.UTC(1970, 0, 1) + Math.floor(Math.random() * 4e12));
      const micros = String(Math.floor(Math.random() * 1e6))
        .padStart(6, "0")
        .slice(0, 1 + Math.floor(Math.random() * 6));
      same(`${at.toISOString().slice(0, 19).replace("T", " ")}${Math.random() < 0.2 ? "" : `.${micros}`}+00`);
    }
  });

  it("leave other forms to node-postgres's parser", () => {
    for (const text of [
      "2026-12-04 20:31:00.123456+01",
      "2026-12-04 20:31:00+05:30",
      "2026-12-04 20:31:00.5-08",
      "0050-06-01 12:00:00+00",
      "0999-06-01 12:00:00.25+00",
      "12026-06-01 12:00:00+00",
      "2026-06-01 12:00:00+00 BC",
      "infinity",
      "-infinity",
      "2026-1x-04 20:31:00+00",
      "2026-12-04 20:31:00.12x4+00",
    ]) {
      same(text);
    }
  });
});
