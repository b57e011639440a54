// A parsed JSON value as JSON text, however deeply it nests. What a model server or an MCP server
// sends is parsed without a depth limit, but JSON.stringify recurses and throws (RangeError) past
// some thousands of levels: the value would then be lost, and its reply with it. This never throws:
// JSON.stringify first, and for a value it cannot serialise a serialiser with its own stack.

type Frame = { items: [key: string | null, value: unknown][]; index: number; close: string };

/** A value as JSON.stringify gives it; the same text for a value nested too deeply for it (see above). */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return deepJsonText(value);
  }
}

/** A leaf's JSON (null for what JSON has no form of, as JSON.stringify writes it in a list). */
function leafText(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "bigint") return value.toString();
  return "null";
}

/** The items a list or an object is written with: an object's fields that have a JSON form, in order. */
function itemsOf(value: object): Frame["items"] {
  if (Array.isArray(value)) return value.map((item) => [null, item]);
  return Object.entries(value).filter(([, item]) => item !== undefined && typeof item !== "function" && typeof item !== "symbol");
}

/** JSON.stringify's text of a value made of lists, objects and leaves, without recursion. */
function deepJsonText(value: unknown): string {
  const out: string[] = [];
  const open = new Set<object>();
  const stack: (Frame & { value: object })[] = [];
  const enter = (item: unknown) => {
    // A value met again inside itself (never so in parsed JSON) is written as null rather than followed.
    if (typeof item !== "object" || item === null || open.has(item)) {
      out.push(leafText(item));
      return;
    }
    open.add(item);
    const list = Array.isArray(item);
    out.push(list ? "[" : "{");
    stack.push({ value: item, items: itemsOf(item), index: 0, close: list ? "]" : "}" });
  };
  enter(value);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.index === frame.items.length) {
      out.push(frame.close);
      open.delete(frame.value);
      stack.pop();
      continue;
    }
    const [key, item] = frame.items[frame.index]!;
    if (frame.index > 0) out.push(",");
    frame.index += 1;
    if (key !== null) out.push(`${JSON.stringify(key)}:`);
    enter(item);
  }
  return out.join("");
}
