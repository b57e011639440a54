// Finds the list worth indexing in a large JSON text — the top-level list, or the largest list
// directly under a top-level object — and where each of its items starts, in one pass without
// building the value. read_spill uses the offsets to slice items out of the stored result
// instead of parsing megabytes for every read (R11).

export type JsonListIndex = {
  /** "$" for a top-level list, "$.items" (or `$["odd key"]`) for a list under a top-level object. */
  path: string;
  /** Where each item starts, as UTF-16 indexes into the text (for previews in process). */
  starts16: number[];
  /** The same starts as character (code point) offsets, which is what SQL `substr` counts. */
  startsCp: number[];
  /** The closing bracket of the list, in both units. */
  end16: number;
  endCp: number;
};

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const BACKSLASH = 0x5c;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

type Candidate = { path: string; open16: number; starts16: number[]; end16: number };

/** The index of the text's main list, or null when the text is not a JSON list or object holding one. */
export function indexJsonList(text: string): JsonListIndex | null {
  let i = 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) i += 1;
  const first = text.charCodeAt(i);
  if (first !== OPEN_LIST && first !== OPEN_OBJECT) return null;

  const stack: number[] = [];
  const done: Candidate[] = [];
  let active: Candidate | null = null;
  let needItem = false;
  let expectKey = false;
  let key: string | null = null;
  for (; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) continue;
    if (active && needItem && stack.length === 1 + (stack[0] === OPEN_OBJECT ? 1 : 0) && c !== CLOSE_LIST) {
      active.starts16.push(i);
      needItem = false;
    }
    if (c === QUOTE) {
      const end = endOfString(text, i);
      if (end < 0) return null;
      if (expectKey && stack.length === 1) key = JSON.parse(text.slice(i, end + 1)) as string;
      i = end;
      continue;
    }
    const inTopObject = stack.length === 1 && stack[0] === OPEN_OBJECT;
    if (c === OPEN_LIST || c === OPEN_OBJECT) {
      const startsList = c === OPEN_LIST && (stack.length === 0 || (inTopObject && key !== null));
      stack.push(c);
      if (startsList) {
        active = { path: stack.length === 1 ? "$" : pathOf(key!), open16: i, starts16: [], end16: -1 };
        needItem = true;
      }
      if (c === OPEN_OBJECT && stack.length === 1) expectKey = true;
    } else if (c === CLOSE_LIST || c === CLOSE_OBJECT) {
      const open = stack.pop();
      if (open !== (c === CLOSE_LIST ? OPEN_LIST : OPEN_OBJECT)) return null;
      if (active && c === CLOSE_LIST && stack.length === (stack[0] === OPEN_OBJECT ? 1 : 0) && stack.length <= 1) {
        active.end16 = i;
        done.push(active);
        active = null;
      }
      if (stack.length === 0) break;
    } else if (c === COMMA) {
      if (active && stack.length === 1 + (stack[0] === OPEN_OBJECT ? 1 : 0)) needItem = true;
      if (inTopObject) expectKey = true;
    } else if (c === COLON) {
      if (inTopObject) expectKey = false;
    }
  }
  if (stack.length !== 0) return null;
  for (i += 1; i < text.length; i += 1) if (!isSpace(text.charCodeAt(i))) return null;
  const best = done.reduce<Candidate | null>((a, b) => (!a || b.end16 - b.open16 > a.end16 - a.open16 ? b : a), null);
  if (!best) return null;
  const toCp = codePointOffsets(text, [...best.starts16, best.end16]);
  return { path: best.path, starts16: best.starts16, startsCp: toCp.slice(0, -1), end16: best.end16, endCp: toCp.at(-1)! };
}

/** The exact text of item k (without the separator that follows it). */
export function itemText(text: string, starts: readonly number[], end: number, k: number): string {
  return trimSeparator(text.slice(starts[k], k + 1 < starts.length ? starts[k + 1] : end));
}

/** An item's slice runs to the next item's start: drop the trailing comma and whitespace. */
export function trimSeparator(slice: string): string {
  let end = slice.length;
  while (end > 0 && (isSpace(slice.charCodeAt(end - 1)) || slice.charCodeAt(end - 1) === COMMA)) end -= 1;
  return slice.slice(0, end);
}

/** Index of the closing quote of the string opening at `open`, or -1. */
function endOfString(text: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const close = text.indexOf('"', from);
    if (close < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return close;
    from = close + 1;
  }
}

const pathOf = (key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? `$.${key}` : `$[${JSON.stringify(key)}]`);

/** Converts ascending UTF-16 indexes to code point offsets (they differ only past surrogate pairs). */
export function codePointOffsets(text: string, indexes: readonly number[]): number[] {
  if (!/[\uD800-\uDFFF]/.test(text)) return [...indexes];
  const out: number[] = [];
  let lows = 0;
  let at = 0;
  for (const index of indexes) {
    for (; at < index; at += 1) {
      const c = text.charCodeAt(at);
      if (c >= 0xdc00 && c <= 0xdfff) lows += 1;
    }
    out.push(index - lows);
  }
  return out;
}

/** Converts code point offsets (ascending) into UTF-16 indexes of `text`. */
export function utf16Offsets(text: string, offsets: readonly number[]): number[] {
  if (!/[\uD800-\uDFFF]/.test(text)) return [...offsets];
  const out: number[] = [];
  let cp = 0;
  let at = 0;
  for (const offset of offsets) {
    while (cp < offset && at < text.length) {
      const c = text.charCodeAt(at);
      at += c >= 0xd800 && c <= 0xdbff && at + 1 < text.length ? 2 : 1;
      cp += 1;
    }
    out.push(at);
  }
  return out;
}
