// W8: the part of a version a read returns is the part the ledger names — its range, its hash
// and whether it is the whole version — and no range cuts a character in two.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { readRange } from "../../src/domain/research/material-ledger.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("readRange", () => {
  it("names the characters returned, end exclusive, with the hash of exactly those characters", () => {
    const content = "abcdefghij".repeat(10);
    expect(readRange(content, 0, 30)).toEqual({ start: 0, end: 30, text: content.slice(0, 30), contentHash: sha256(content.slice(0, 30)), coverage: "PART" });
    expect(readRange(content, 90, 30)).toMatchObject({ start: 90, end: 100, text: content.slice(90), coverage: "PART" });
    expect(readRange(content, 0, 1_000)).toMatchObject({ start: 0, end: 100, contentHash: sha256(content), coverage: "WHOLE" });
  });

  it("reads nothing past the end, and an empty version is read whole", () => {
    expect(readRange("short", 5, 10)).toBeNull();
    expect(readRange("", 0, 10)).toMatchObject({ start: 0, end: 0, coverage: "WHOLE", contentHash: sha256("") });
  });

  it("never splits a character of two UTF-16 units: a start inside one moves back to it, an end inside one moves before it", () => {
    const content = "ab😀cd😀ef"; // 😀 takes two units: a=0 b=1 😀=2,3 c=4 d=5 😀=6,7 e=8 f=9
    expect(readRange(content, 3, 4)).toMatchObject({ start: 2, end: 6, text: "😀cd" });
    expect(readRange(content, 4, 3)).toMatchObject({ start: 4, end: 6, text: "cd" });
    const part = readRange(content, 3, 4)!;
    expect(part.contentHash).toBe(sha256("😀cd"));
  });
});
