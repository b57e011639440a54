// Reading a spilled result back (R11): by UTF-8 byte range (widened to character boundaries),
// by page, or by JSON path — never more than the per-call maximum, and every reply says exactly
// what it returned. Mistakes (a bad path, a range past the end) are ToolErrors the model can
// correct. A path through the indexed list reads only the items it selects.
import type { SpillInfo, SpillStore } from "../ports/spill-store.js";
import { ToolError } from "../ports/tool.js";
import { evaluate, formatPath, JsonPathError, parseJsonPath, type PathStep, selectsMany, sliceBounds } from "./json-path.js";

export type ReadRequest = { range: { start: number; end: number } } | { jsonPath: string } | { page: number };

const isContinuation = (byte: number | undefined) => byte !== undefined && (byte & 0xc0) === 0x80;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const byteLength = (text: string) => Buffer.byteLength(text, "utf8");

/**
 * Widens [start, end) over `window` (the bytes from `windowStart`) to whole characters: the start
 * moves back and the end forward to the nearest character boundary. A widened range over `max`
 * bytes is cut at the last character boundary that fits.
 */
export function widenToCharacters(window: Uint8Array, windowStart: number, start: number, end: number, max: number): { start: number; end: number } {
  const at = (offset: number) => window[offset - windowStart];
  let from = start;
  while (from > windowStart && isContinuation(at(from))) from -= 1;
  let to = end;
  while (isContinuation(at(to))) to += 1;
  if (to - from > max) {
    to = from + max;
    while (to > from && isContinuation(at(to))) to -= 1;
  }
  return { start: from, end: to };
}

/** Moves an offset back to the start of the character it falls in. */
export function snapBack(window: Uint8Array, windowStart: number, offset: number): number {
  let at = offset;
  while (at > windowStart && isContinuation(window[at - windowStart])) at -= 1;
  return at;
}

export async function readBack(store: SpillStore, spill: SpillInfo, request: ReadRequest, maxBytes: number): Promise<string> {
  if ("range" in request) return readRange(store, spill, request.range, maxBytes);
  if ("page" in request) return readPage(store, spill, request.page, maxBytes);
  return readPath(store, spill, request.jsonPath, maxBytes);
}

async function readRange(store: SpillStore, spill: SpillInfo, range: { start: number; end: number }, maxBytes: number): Promise<string> {
  const size = spill.sizeBytes;
  if (!Number.isInteger(range.start) || !Number.isInteger(range.end) || range.start < 0) {
    throw new ToolError("range.start and range.end are whole byte offsets, start ≥ 0, end exclusive.");
  }
  if (range.start >= size) throw new ToolError(`range.start ${range.start} is past the end: the result has ${size} bytes (offsets 0–${size - 1}).`);
  if (range.end <= range.start) throw new ToolError(`range.end (${range.end}) must be greater than range.start (${range.start}); end is exclusive.`);
  const wantedEnd = Math.min(range.end, size, range.start + maxBytes);
  const windowStart = Math.max(0, range.start - 3);
  const window = await store.readBytes(spill, windowStart, Math.min(size, wantedEnd + 3));
  const { start, end } = widenToCharacters(window, windowStart, range.start, wantedEnd, maxBytes);
  const text = utf8.decode(window.subarray(start - windowStart, end - windowStart));
  const cut = Math.min(range.end, size) - range.start > maxBytes;
  const reasons = [
    start < range.start || (end > wantedEnd && !cut) ? "widened to character boundaries" : null,
    range.end > size ? `the result ends at byte ${size}` : null,
    cut ? `cut to the ${maxBytes}-byte maximum per read at a character boundary; continue from ${end}` : null,
  ].filter(Boolean);
  const notes = reasons.length > 0 ? `; requested ${range.start}–${range.end}: ${reasons.join("; ")}` : "";
  return `bytes ${start}–${end} of ${size} (end exclusive${notes}):\n${text}`;
}

async function readPage(store: SpillStore, spill: SpillInfo, page: number, maxBytes: number): Promise<string> {
  // Both ends of a page snap back to a character start, so pages tile the result exactly; the
  // page size leaves room for the up to three bytes a snap can add.
  const pageBytes = maxBytes - 3;
  const pages = Math.max(1, Math.ceil(spill.sizeBytes / pageBytes));
  if (!Number.isInteger(page) || page < 1 || page > pages) throw new ToolError(`page is a number from 1 to ${pages} (pages of ${pageBytes} bytes).`);
  const nominalStart = (page - 1) * pageBytes;
  const nominalEnd = Math.min(spill.sizeBytes, page * pageBytes);
  const windowStart = Math.max(0, nominalStart - 3);
  // One byte past the end shows whether the page's end falls inside a character.
  const window = await store.readBytes(spill, windowStart, Math.min(spill.sizeBytes, nominalEnd + 1));
  const start = snapBack(window, windowStart, nominalStart);
  const end = nominalEnd === spill.sizeBytes ? nominalEnd : snapBack(window, windowStart, nominalEnd);
  const text = utf8.decode(window.subarray(start - windowStart, end - windowStart));
  const next = page < pages ? `next: {"page":${page + 1}}` : "last page";
  return `page ${page} of ${pages}: bytes ${start}–${end} of ${spill.sizeBytes} (end exclusive; ${next}):\n${text}`;
}

async function readPath(store: SpillStore, spill: SpillInfo, jsonPath: string, maxBytes: number): Promise<string> {
  let steps: PathStep[];
  try {
    steps = parseJsonPath(jsonPath);
  } catch (error) {
    throw new ToolError(error instanceof Error ? error.message : String(error));
  }
  const listSteps = spill.list ? parseJsonPath(spill.list.path) : null;
  const throughList =
    listSteps !== null &&
    steps.length > listSteps.length &&
    formatPath(steps.slice(0, listSteps.length)) === formatPath(listSteps) &&
    ["index", "slice", "wildcard"].includes(steps[listSteps.length]!.type);
  try {
    return throughList ? await readIndexed(store, spill, steps, listSteps.length, maxBytes) : await readParsed(store, spill, steps, maxBytes);
  } catch (error) {
    if (error instanceof JsonPathError) throw new ToolError(error.message);
    throw error;
  }
}

/** A path that selects items of the indexed list: only those items are read (and parsed if the path goes on). */
async function readIndexed(store: SpillStore, spill: SpillInfo, steps: PathStep[], listDepth: number, maxBytes: number): Promise<string> {
  const count = spill.list!.itemCount;
  const selector = steps[listDepth]!;
  const rest = steps.slice(listDepth + 1);
  const path = formatPath(steps);
  if (selector.type === "index") {
    const at = selector.index < 0 ? count + selector.index : selector.index;
    if (at < 0 || at >= count) throw new ToolError(`${spill.list!.path} has ${count} items (0–${count - 1}); index ${selector.index} is out of range.`);
    const [item] = await store.readItems(spill, at, at + 1);
    const value = rest.length === 0 ? item! : jsonText(evaluate(JSON.parse(item!), rest));
    if (!selectsMany(rest)) return single(path, value, maxBytes);
    return many(path, JSON.parse(value) as unknown[], maxBytes);
  }
  const [from, to] = selector.type === "slice" ? sliceBounds(selector, count) : [0, count];
  if (from >= to) return `${path}: no items (the list at ${spill.list!.path} has ${count}):\n[]`;
  const pieces: string[] = [];
  let used = 2;
  let next = from;
  // Items are fetched a batch at a time, until the reply is full or the selection is read.
  outer: while (next < to) {
    const batch = await store.readItems(spill, next, Math.min(to, next + 200));
    for (const item of batch) {
      const values = rest.length === 0 ? [item] : projected(JSON.parse(item), rest);
      const size = values.reduce((sum, v) => sum + byteLength(v) + 1, 0);
      if (used + size > maxBytes) break outer;
      pieces.push(...values);
      used += size;
      next += 1;
    }
  }
  if (next === from && from < to) {
    throw new ToolError(`item ${from} of ${spill.list!.path} alone is over the ${maxBytes}-byte maximum per read; read it by byte range or narrow the path.`);
  }
  const covered = `items ${from}–${next - 1} of ${count} in ${spill.list!.path}`;
  const more =
    next < to
      ? `; the reply is full at ${maxBytes} bytes: continue with ${formatPath([...steps.slice(0, listDepth), { type: "slice", start: next, end: to }, ...rest])}`
      : "";
  return `${path}: ${covered}${more}:\n[${pieces.join(",")}]`;
}

/** Applies the rest of a path to one item of a many-selection: missing keys select nothing. */
function projected(item: unknown, rest: PathStep[]): string[] {
  try {
    const value = evaluate(item, rest);
    return (selectsMany(rest) ? (value as unknown[]) : [value]).map(jsonText);
  } catch (error) {
    if (error instanceof JsonPathError) return [];
    throw error;
  }
}

/** Any other path: the whole stored result is parsed (slower, but any path of the subset works). */
async function readParsed(store: SpillStore, spill: SpillInfo, steps: PathStep[], maxBytes: number): Promise<string> {
  let value: unknown;
  try {
    value = JSON.parse(await store.readWhole(spill));
  } catch {
    throw new ToolError("this result is not JSON; read it by byte range or page.");
  }
  const selected = evaluate(value, steps);
  const path = formatPath(steps);
  return selectsMany(steps) ? many(path, selected as unknown[], maxBytes) : single(path, jsonText(selected), maxBytes);
}

function single(path: string, text: string, maxBytes: number): string {
  const size = byteLength(text);
  if (size > maxBytes) {
    throw new ToolError(
      `the value at ${path} is ${size} bytes, over the ${maxBytes}-byte maximum per read; narrow the path (e.g. a slice [0:10]) or read by byte range.`,
    );
  }
  return `${path}: ${size} bytes:\n${text}`;
}

function many(path: string, values: unknown[], maxBytes: number): string {
  const pieces: string[] = [];
  let used = 2;
  for (const value of values) {
    const text = jsonText(value);
    if (used + byteLength(text) + 1 > maxBytes) break;
    pieces.push(text);
    used += byteLength(text) + 1;
  }
  const more = pieces.length < values.length ? `; only the first ${pieces.length} fit the ${maxBytes}-byte maximum per read: narrow the path` : "";
  return `${path}: ${values.length} values${more}:\n[${pieces.join(",")}]`;
}

const jsonText = (value: unknown) => (value === undefined ? "null" : JSON.stringify(value));
