// The first object key a JSON text repeats within one object, at any depth ("command" in
// `{"command":"ls", …, "command":"rm -rf /"}`). JSON.parse keeps the last value of a repeated key
// silently, while a person reading the text may have read the first: a call whose arguments
// repeat a key cannot be shown to a person as what it will run. Keys are compared decoded
// (`"\u0063ommand"` is `"command"`). One pass with an explicit stack: no depth makes it recurse.

/** The first key repeated within one object of `text`, or undefined (also when `text` is not JSON). */
export function repeatedKey(text: string): string | undefined {
  let repeated: string | undefined;
  eachKey(text, (key, before) => {
    if (before.has(key)) repeated = key;
    return repeated !== undefined;
  });
  return repeated;
}

/**
 * Visits each object key of the JSON `text` in order, decoded, with the keys its object had before
 * it, the object's depth (1 for the outermost object) and its trail: the keys that lead to the
 * object from the outermost value, null for an array's item (`c` in `{"a":[{"b":{"c":1}}]}` has
 * ["a", null, "b"]; the array is the one being read, not a copy), until `visit` returns true.
 * Nothing is visited when `text` is not JSON.
 */
export function eachKey(text: string, visit: (key: string, before: ReadonlySet<string>, depth: number, trail: readonly (string | null)[]) => boolean): void {
  try {
    JSON.parse(text);
  } catch {
    return;
  }
  // One entry per open object (its keys so far) or array (null), innermost last.
  const open: (Set<string> | null)[] = [];
  // The key each open object is reading the value of (null for an array); what each open value but the outermost is under.
  const reading: (string | null)[] = [];
  const trail: (string | null)[] = [];
  let depth = 0;
  let expectingKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (char === '"') {
      const end = closingQuote(text, i);
      const top = open.at(-1);
      if (top && expectingKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (visit(key, top, depth, trail)) return;
        top.add(key);
        reading[reading.length - 1] = key;
        expectingKey = false;
      }
      i = end;
    } else if (char === "{" || char === "[") {
      if (open.length > 0) trail.push(reading.at(-1) ?? null);
      open.push(char === "{" ? new Set() : null);
      reading.push(null);
      if (char === "{") depth += 1;
      expectingKey = char === "{";
    } else if (char === "}" || char === "]") {
      if (open.pop()) depth -= 1;
      reading.pop();
      trail.pop();
    } else if (char === ",") {
      expectingKey = open.at(-1) != null;
    }
  }
}

/** The index of the quote that closes the string opening at `start` (the text is valid JSON). */
export function closingQuote(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i += 1) {
    if (text[i] === "\\") i += 1;
    else if (text[i] === '"') return i;
  }
  return text.length - 1;
}
