// The stored-text codec: NUL, lone surrogates and U+FFFF survive PostgreSQL text and jsonb
// exactly, ordinary text is stored unchanged, and models see safe placeholders.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/open-database.js";
import { forModel, fromStored, fromStoredJson, toStored, toStoredJson } from "../../src/domain/text/stored-text.js";
import { isStorableText } from "../../src/domain/text/unstorable-text.js";

const hasUnstorable = (text: string) => !isStorableText(text);
import { backends, openTestDatabase } from "../support/databases.js";

const E = "\uFFFF";

/** True when the string has NUL or a UTF-16 code unit not part of a proper pair. */
function unstorable(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return true;
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = s.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
      return true;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

/** Reference rendering for models, one code point at a time. */
function rendered(s: string): string {
  let out = "";
  for (const ch of s) {
    if (ch === "\u0000") out += "\u2400";
    else if (ch === "\uFFFF" || (ch.length === 1 && ch >= "\uD800" && ch <= "\uDFFF")) out += "\uFFFD";
    else out += ch;
  }
  return out;
}

/** mulberry32: small, seeded, deterministic. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Pieces that are easy to confuse with escapes or pairs, plus ordinary characters.
const alphabet = [
  "a",
  "0",
  "u",
  "d",
  "8",
  "f",
  "\u0000",
  "\uD800",
  "\uDBFF",
  "\uDC00",
  "\uDFFF",
  "\uD83D",
  "\uDE00",
  "😀",
  E,
  "\uFFFE",
  "\uFFFD",
  "é",
  "\u2400",
  "\\",
];

function randomString(next: () => number, maxLength: number): string {
  const length = Math.floor(next() * (maxLength + 1));
  let s = "";
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(next() * alphabet.length)]!;
  return s;
}

describe("toStored / fromStored", () => {
  const cases: [string, string, string][] = [
    ["NUL", "a\u0000b", `a${E}0b`],
    ["only NUL", "\u0000", `${E}0`],
    ["lone high at the start", "\uD800abc", `${E}ud800abc`],
    ["lone high in the middle", "ab\uDBFFcd", `ab${E}udbffcd`],
    ["lone high at the end", "abc\uD83D", `abc${E}ud83d`],
    ["lone low at the start", "\uDC00abc", `${E}udc00abc`],
    ["lone low in the middle", "ab\uDFFFcd", `ab${E}udfffcd`],
    ["lone low at the end", "abc\uDE00", `abc${E}ude00`],
    ["lone high before a pair", "\uD800\uD83D\uDE00", `${E}ud800😀`],
    ["lone low after a pair", "\uD83D\uDE00\uDE00", `😀${E}ude00`],
    ["low then high (both lone)", "\uDE00\uD83D", `${E}ude00${E}ud83d`],
    ["U+FFFF", "x\uFFFFy", `x${E}${E}y`],
    ["raw escape for NUL", `${E}0`, `${E}${E}0`],
    ["raw escape for a surrogate", `${E}ud800`, `${E}${E}ud800`],
    ["raw doubled escape", `${E}${E}`, `${E}${E}${E}${E}`],
  ];

  it.each(cases)("round-trips %s", (_name, raw, stored) => {
    expect(toStored(raw)).toBe(stored);
    expect(fromStored(stored)).toBe(raw);
    expect(unstorable(toStored(raw))).toBe(false);
  });

  it("keeps ordinary text, proper pairs included, as the very same string", () => {
    for (const s of ["", "hello", "Zürich — naïve café 日本語", "emoji 😀 🎉 👩‍👩‍👧", "\uFFFE\uFFFD\u2400", "back\\slash \\u0000 literal"]) {
      expect(toStored(s)).toBe(s);
      expect(fromStored(s)).toBe(s);
      expect(Buffer.from(toStored(s), "utf8").equals(Buffer.from(s, "utf8"))).toBe(true);
    }
  });

  it("round-trips thousands of random strings and never stores NUL or a lone surrogate", () => {
    const next = random(20240607);
    for (let i = 0; i < 5000; i++) {
      const s = randomString(next, 24);
      const stored = toStored(s);
      expect(unstorable(stored)).toBe(false);
      expect(fromStored(stored)).toBe(s);
      expect(hasUnstorable(s)).toBe(unstorable(s));
    }
  });

  it("leaves a cut or unknown escape as it is instead of failing", () => {
    expect(fromStored(`abc${E}`)).toBe(`abc${E}`);
    expect(fromStored(`abc${E}u`)).toBe(`abc${E}u`);
    expect(fromStored(`abc${E}ud8`)).toBe(`abc${E}ud8`);
    expect(fromStored(`abc${E}ud80`)).toBe(`abc${E}ud80`);
    expect(fromStored(`${E}x${E}0`)).toBe(`${E}x\u0000`);
    // Not what toStored writes: uppercase hex, or a code that is not a surrogate.
    expect(fromStored(`${E}uD800`)).toBe(`${E}uD800`);
    expect(fromStored(`${E}u0041`)).toBe(`${E}u0041`);
    // A complete escape after a cut one still decodes.
    expect(fromStored(`${E}ud8${E}ud800`)).toBe(`${E}ud8\uD800`);
    // Every prefix of a stored string decodes without throwing.
    const stored = toStored("a\u0000\uD800\uFFFF😀b");
    for (let i = 0; i <= stored.length; i++) expect(() => fromStored(stored.slice(0, i))).not.toThrow();
  });
});

describe("hasUnstorable", () => {
  it("finds NUL and lone surrogates, not pairs or U+FFFF", () => {
    expect(hasUnstorable("")).toBe(false);
    expect(hasUnstorable("plain 😀")).toBe(false);
    expect(hasUnstorable("\uFFFF")).toBe(false);
    expect(hasUnstorable("a\u0000")).toBe(true);
    expect(hasUnstorable("😀\uD800")).toBe(true);
    expect(hasUnstorable("\uDC00😀")).toBe(true);
  });
});

describe("forModel", () => {
  it("renders stored text with visible placeholders", () => {
    expect(forModel(toStored("a\u0000b"))).toBe("a\u2400b");
    expect(forModel(toStored("x\uD800y\uDC00z"))).toBe("x\uFFFDy\uFFFDz");
    expect(forModel(toStored("\uD800\uD83D\uDE00"))).toBe("\uFFFD😀");
    expect(forModel(toStored("p\uFFFFq"))).toBe("p\uFFFDq");
    expect(forModel(toStored(`${E}0`))).toBe("\uFFFD0");
  });

  it("returns ordinary text unchanged", () => {
    for (const s of ["", "hello", "emoji 😀 🎉", "Zürich — 日本語"]) expect(forModel(s)).toBe(s);
  });

  it("is safe on raw text and on cut escapes too", () => {
    expect(forModel("raw\u0000nul")).toBe("raw\u2400nul");
    expect(forModel("raw\uDE00lone")).toBe("raw\uFFFDlone");
    expect(forModel(`cut${E}ud8`)).toBe("cut\uFFFDud8");
  });

  it("never shows a model NUL, a lone surrogate or U+FFFF", () => {
    const next = random(7);
    for (let i = 0; i < 3000; i++) {
      const s = randomString(next, 24);
      for (const input of [s, toStored(s)]) {
        const shown = forModel(input);
        expect(unstorable(shown)).toBe(false);
        expect(shown.includes(E)).toBe(false);
      }
      expect(forModel(toStored(s))).toBe(rendered(s));
    }
  });
});

describe("toStoredJson / fromStoredJson", () => {
  const value = {
    plain: "ok",
    "key\u0000nul": ["a\uD800", { "\uDC00": "\uFFFF", n: 1, b: true, z: null }],
    nested: { deeper: [["\u0000"]] },
    count: 3,
  };

  it("encodes every string, keys included, and decodes back", () => {
    const stored = toStoredJson(value);
    expect(stored).toEqual({
      plain: "ok",
      [`key${E}0nul`]: [`a${E}ud800`, { [`${E}udc00`]: `${E}${E}`, n: 1, b: true, z: null }],
      nested: { deeper: [[`${E}0`]] },
      count: 3,
    });
    expect(unstorable(JSON.stringify(stored))).toBe(false);
    expect(fromStoredJson(stored)).toEqual(value);
  });

  it("does not change its input and keeps unchanged parts", () => {
    const before = structuredClone(value);
    const stored = toStoredJson(value) as typeof value;
    expect(value).toEqual(before);
    expect(stored.nested).not.toBe(value.nested);
    const clean = { a: "x", b: [1, "y", { c: "😀" }] };
    expect(toStoredJson(clean)).toBe(clean);
    expect(fromStoredJson(clean)).toBe(clean);
  });

  it("passes scalars through and keeps key order and a __proto__ key", () => {
    expect(toStoredJson("\u0000")).toBe(`${E}0`);
    expect(toStoredJson(42)).toBe(42);
    expect(toStoredJson(null)).toBe(null);
    expect(toStoredJson(undefined)).toBe(undefined);
    const parsed = JSON.parse('{"b":"\\u0000","__proto__":{"x":"\\ud800"},"a":1}') as Record<string, unknown>;
    const stored = toStoredJson(parsed) as Record<string, unknown>;
    expect(Object.keys(stored)).toEqual(["b", "__proto__", "a"]);
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(JSON.stringify(fromStoredJson(stored))).toBe(JSON.stringify(parsed));
  });
});

describe.each(backends)("through the database on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ db, dispose } = await openTestDatabase(backend));
    await db.migrate();
  });
  afterAll(() => dispose?.());

  const samples = ["", "plain", "a\u0000b", "\uD800", "x\uDFFFy", "\uD800\uD83D\uDE00", "p\uFFFFq", `${E}0`, `${E}ud800`, "Zürich 😀 — \u0000\uDBFF\uFFFF"];

  it("stores text with NUL, lone surrogates and U+FFFF as text, and reads it back exactly", async () => {
    const next = random(99);
    const all = [...samples, ...Array.from({ length: 50 }, () => randomString(next, 16))];
    for (const s of all) {
      const rows = await db.prisma.$queryRawUnsafe<{ t: string }[]>("SELECT $1::text AS t", toStored(s));
      expect(fromStored(rows[0]!.t)).toBe(s);
    }
  });

  it("stores JSON with such strings, in keys too, as jsonb and reads it back exactly", async () => {
    const obj = { list: samples, keyed: Object.fromEntries(samples.map((s, i) => [s, i])), nested: { "\u0000": ["\uDC00", { "\uFFFF": "\uD83D" }] } };
    const rows = await db.prisma.$queryRawUnsafe<{ j: unknown }[]>("SELECT $1::jsonb AS j", JSON.stringify(toStoredJson(obj)));
    const raw = rows[0]!.j;
    // Whether the driver hands jsonb back parsed or as a string, the decoded value is the original.
    const parsed: unknown = typeof raw === "string" ? JSON.parse(raw) : raw;
    expect(fromStoredJson(parsed)).toEqual(obj);
  });
});
