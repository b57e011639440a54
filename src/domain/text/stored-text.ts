// A lossless codec between the text a run produces and the text PostgreSQL can keep.
//
// PostgreSQL `text` and `jsonb` cannot hold U+0000, and a lone UTF-16 surrogate (an unpaired
// code unit in \uD800–\uDFFF) has no UTF-8 form: the driver silently turns it into U+FFFD in a
// text column, and jsonb rejects its "\ud800" escape outright. Tools, MCP servers, web pages and
// models all produce such text, and the run log must give back exactly what was said, so we
// escape those characters on the way in and restore them on the way out.
//
// The escape character is U+FFFF. It is a Unicode noncharacter: reserved for a program's
// internal use, never meant to be interchanged, so real text almost never contains it. Yet it is
// valid UTF-8 (EF BF BF), so PostgreSQL stores it like any other character. Its rare occurrences
// in input are escaped too, which keeps the encoding reversible for every string:
//
//   U+0000                 → U+FFFF "0"
//   lone surrogate \uXXXX  → U+FFFF "u" xxxx   (4 lowercase hex digits, e.g. U+FFFF "ud800")
//   U+FFFF                 → U+FFFF U+FFFF
//
// Everything else, proper surrogate pairs included, passes through unchanged, so ordinary text
// is stored byte-identical, and rows written before this codec existed decode to themselves
// (unless they happen to contain U+FFFF, which was never expected in them).

const ESCAPE = "\uFFFF";
const ESCAPE_CODE = 0xffff;

// Any code unit that might need work. Proper pairs match too (the class sees code units, not
// code points); the slow path tells them apart. Measured: a `u`-flag class that skips pairs is
// several times slower on non-ASCII text, and this test runs on every write.
const MAYBE_SPECIAL = /[\u0000\uD800-\uDFFF\uFFFF]/;

/** Encodes text so PostgreSQL `text`/`jsonb` can hold it; `fromStored` restores it exactly. */
export function toStored(text: string): string {
  if (!MAYBE_SPECIAL.test(text)) return text;
  return rewrite(text, STORE);
}

/**
 * Restores text encoded by `toStored`. Stored text may have been cut by SQL (a preview, a
 * substring) in the middle of an escape, so a U+FFFF that does not start a complete escape is
 * kept as it is instead of failing the read.
 */
export function fromStored(stored: string): string {
  let escapeAt = stored.indexOf(ESCAPE);
  if (escapeAt === -1) return stored;
  let out = "";
  let last = 0;
  while (escapeAt !== -1) {
    const tag = stored.charCodeAt(escapeAt + 1);
    let decoded: string | undefined;
    let length = 2;
    if (tag === ESCAPE_CODE) decoded = ESCAPE;
    else if (tag === 0x30 /* "0" */) decoded = "\u0000";
    else if (tag === 0x75 /* "u" */) {
      // Only what toStored writes: four lowercase hex digits naming a surrogate. Anything else
      // is not ours (or was cut short), so it stays text rather than turning into a character.
      const code = surrogateAt(stored, escapeAt + 2);
      if (code !== -1) {
        decoded = String.fromCharCode(code);
        length = 6;
      }
    }
    if (decoded === undefined) {
      escapeAt = stored.indexOf(ESCAPE, escapeAt + 1);
      continue;
    }
    out += stored.slice(last, escapeAt) + decoded;
    last = escapeAt + length;
    escapeAt = stored.indexOf(ESCAPE, last);
  }
  return last === 0 ? stored : out + stored.slice(last);
}

/** The surrogate named by four lowercase hex digits at `at` ("d800"–"dfff"), or -1. */
function surrogateAt(text: string, at: number): number {
  let code = 0;
  for (let i = at; i < at + 4; i++) {
    const c = text.charCodeAt(i); // NaN past the end, which fails both tests below
    const digit = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x61 + 10 : -1;
    if (digit === -1) return -1;
    code = code * 16 + digit;
  }
  return code >= 0xd800 && code <= 0xdfff ? code : -1;
}

/**
 * What a language model is shown for stored text. Model APIs take JSON, where NUL and lone
 * surrogates are invalid or get mangled, so they become visible placeholders: U+0000 → "␀"
 * (U+2400), a lone surrogate → U+FFFD, and the noncharacter U+FFFF → U+FFFD. Accepts raw
 * (unencoded) text as well, so whatever reaches a model through here is safe.
 */
export function forModel(stored: string): string {
  // One scan settles the common case: no U+FFFF means no escapes, and no NUL or surrogate.
  if (!MAYBE_SPECIAL.test(stored)) return stored;
  // Raw text may reach here too (no escapes, but NUL or a lone surrogate): render it all the same.
  const text = stored.indexOf(ESCAPE) === -1 ? stored : fromStored(stored);
  return rewrite(text, MODEL);
}

/**
 * `toStored` over a JSON value: every string, object keys included, is encoded. Other values are
 * kept. The input is never changed; unchanged parts (or the whole value) are returned as they are.
 * The value keeps its type: only the text of strings changes, never what is a string, an array or
 * an object (a key changes only if it holds a character that is escaped, which no named key does).
 */
export function toStoredJson<T>(value: T): T {
  return mapJson(value, toStored) as T;
}

/** `fromStored` over a JSON value, the inverse of `toStoredJson`; the value keeps its type likewise. */
export function fromStoredJson<T>(value: T): T {
  return mapJson(value, fromStored) as T;
}

/** `forModel` over a JSON value (every string, object keys included): what a model may be shown of it. */
export function forModelJson<T>(value: T): T {
  return mapJson(value, forModel) as T;
}

// ---------------------------------------------------------------------------------------------

type Replacements = { nul: string; ffff: string; lone: (code: number) => string };

const STORE: Replacements = { nul: `${ESCAPE}0`, ffff: `${ESCAPE}${ESCAPE}`, lone: (code) => `${ESCAPE}u${code.toString(16)}` };
const MODEL: Replacements = { nul: "\u2400", ffff: "\uFFFD", lone: () => "\uFFFD" };

/**
 * Replaces U+0000, U+FFFF and lone surrogates in one pass, leaving proper pairs alone. A plain
 * code-unit loop measured faster here than a `u`-flag regex replace; it slices runs of untouched
 * text and returns the input itself when nothing was replaced.
 */
function rewrite(text: string, replacements: Replacements): string {
  let out = "";
  let last = 0;
  let changed = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code !== 0 && code < 0xd800) continue;
    if (code > 0xdfff && code !== ESCAPE_CODE) continue;
    let replacement: string;
    if (code === 0) replacement = replacements.nul;
    else if (code === ESCAPE_CODE) replacement = replacements.ffff;
    else if (code <= 0xdbff) {
      // A high surrogate followed by a low one is a proper pair: skip both.
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      replacement = replacements.lone(code);
    } else {
      // A low surrogate reached here had no high surrogate before it (pairs are skipped whole).
      replacement = replacements.lone(code);
    }
    out += text.slice(last, i) + replacement;
    last = i + 1;
    changed = true;
  }
  return changed ? out + text.slice(last) : text;
}

/**
 * Maps every string in a JSON value, keys included, copying a container only when something in
 * it changed. Only arrays and plain objects (what JSON.parse makes) are walked; any other object
 * (a Date, a Buffer) is kept as it is, since its JSON form is not ours to rewrite.
 */
function mapJson(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === "string") return map(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const mapped = mapJson(item, map);
      if (copy === undefined && mapped !== item) copy = value.slice(0, i);
      copy?.push(mapped);
    }
    return copy ?? value;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let copy: Record<string, unknown> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const item = record[key];
    const mappedKey = map(key);
    const mappedItem = mapJson(item, map);
    if (copy === undefined) {
      if (mappedKey === key && mappedItem === item) continue;
      copy = {};
      for (let j = 0; j < i; j++) define(copy, keys[j]!, record[keys[j]!]);
    }
    define(copy, mappedKey, mappedItem);
  }
  return copy ?? value;
}

// defineProperty, not assignment: a "__proto__" key from JSON.parse is an ordinary own property
// and must stay one, rather than replace the copy's prototype.
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
