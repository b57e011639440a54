// The JSON-path subset read_spill understands (R11), parsed into steps and evaluated over plain
// values. Supported: `$`, `.key`, `["key"]` / `['key']`, `[n]` (negative counts from the end),
// `[a:b]` (end exclusive, either side optional, negatives allowed), `[*]` and `.*`.
// A path with a slice or wildcard selects a list of values; otherwise a single value.

export type PathStep =
  | { type: "key"; key: string }
  | { type: "index"; index: number }
  | { type: "slice"; start: number | null; end: number | null }
  | { type: "wildcard" };

export class JsonPathError extends Error {
  override name = "JsonPathError";
}

const STEP = /^(?:\.([A-Za-z_$][\w$-]*)|\.\*|\[\s*\*\s*\]|\[\s*(-?\d+)\s*\]|\[\s*(-?\d+)?\s*:\s*(-?\d+)?\s*\]|\[\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*\])/;

export function parseJsonPath(path: string): PathStep[] {
  const trimmed = path.trim();
  if (!trimmed.startsWith("$")) throw new JsonPathError(`a JSON path starts with "$" (got ${JSON.stringify(path)})`);
  const steps: PathStep[] = [];
  let rest = trimmed.slice(1);
  while (rest.length > 0) {
    const match = STEP.exec(rest);
    if (!match) throw new JsonPathError(`cannot read the path at ${JSON.stringify(rest)}; supported: .key, ["key"], [n], [a:b], [*]`);
    const [whole, dotKey, index, start, end, quoted] = match;
    if (dotKey !== undefined) steps.push({ type: "key", key: dotKey });
    else if (index !== undefined) steps.push({ type: "index", index: Number(index) });
    else if (quoted !== undefined) steps.push({ type: "key", key: unquote(quoted) });
    else if (whole.includes(":")) steps.push({ type: "slice", start: start === undefined ? null : Number(start), end: end === undefined ? null : Number(end) });
    else steps.push({ type: "wildcard" });
    rest = rest.slice(whole.length);
  }
  return steps;
}

function unquote(quoted: string): string {
  const body = quoted.slice(1, -1);
  return quoted.startsWith("'") ? (JSON.parse(`"${body.replace(/\\'/g, "'").replace(/"/g, '\\"')}"`) as string) : (JSON.parse(quoted) as string);
}

export const selectsMany = (steps: readonly PathStep[]) => steps.some((s) => s.type === "slice" || s.type === "wildcard");

/** A slice's bounds resolved against a list length, like Array.prototype.slice. */
export function sliceBounds(step: { start: number | null; end: number | null }, length: number): [number, number] {
  const resolve = (value: number | null, fallback: number) => (value === null ? fallback : value < 0 ? Math.max(0, length + value) : Math.min(value, length));
  const from = resolve(step.start, 0);
  return [from, Math.max(from, resolve(step.end, length))];
}

export function formatPath(steps: readonly PathStep[]): string {
  return (
    "$" +
    steps
      .map((s) => {
        switch (s.type) {
          case "key":
            return /^[A-Za-z_$][\w$]*$/.test(s.key) ? `.${s.key}` : `[${JSON.stringify(s.key)}]`;
          case "index":
            return `[${s.index}]`;
          case "slice":
            return `[${s.start ?? ""}:${s.end ?? ""}]`;
          case "wildcard":
            return "[*]";
          default: {
            const unknown: never = s;
            throw new Error(`unknown step ${JSON.stringify(unknown)}`);
          }
        }
      })
      .join("")
  );
}

/**
 * Applies the steps. Returns the single value, or the list of values when the path selects
 * many; a key or index that does not exist is a JsonPathError naming where the path stopped.
 */
export function evaluate(value: unknown, steps: readonly PathStep[]): unknown {
  let nodes: unknown[] = [value];
  steps.forEach((step, position) => {
    const where = () => formatPath(steps.slice(0, position));
    nodes = nodes.flatMap((node): unknown[] => {
      switch (step.type) {
        case "key":
          if (node === null || typeof node !== "object" || Array.isArray(node) || !Object.hasOwn(node, step.key)) {
            if (selectsMany(steps.slice(0, position))) return [];
            throw new JsonPathError(`${where()} has no key ${JSON.stringify(step.key)}${describe(node)}`);
          }
          return [(node as Record<string, unknown>)[step.key]];
        case "index": {
          if (!Array.isArray(node)) {
            if (selectsMany(steps.slice(0, position))) return [];
            throw new JsonPathError(`${where()} is not a list${describe(node)}`);
          }
          const at = step.index < 0 ? node.length + step.index : step.index;
          if (at < 0 || at >= node.length) {
            if (selectsMany(steps.slice(0, position))) return [];
            throw new JsonPathError(`${where()} has ${node.length} items; index ${step.index} is out of range`);
          }
          return [node[at]];
        }
        case "slice": {
          if (!Array.isArray(node)) {
            if (selectsMany(steps.slice(0, position))) return [];
            throw new JsonPathError(`${where()} is not a list${describe(node)}`);
          }
          const [from, to] = sliceBounds(step, node.length);
          return node.slice(from, to);
        }
        case "wildcard":
          if (Array.isArray(node)) return node;
          if (node !== null && typeof node === "object") return Object.values(node);
          return [];
        default: {
          const unknown: never = step;
          throw new Error(`unknown step ${JSON.stringify(unknown)}`);
        }
      }
    });
  });
  return selectsMany(steps) ? nodes : nodes[0];
}

function describe(node: unknown): string {
  if (Array.isArray(node)) return ` (it is a list of ${node.length})`;
  if (node === null) return " (it is null)";
  if (typeof node === "object") {
    const keys = Object.keys(node);
    return ` (its keys: ${keys.slice(0, 20).join(", ")}${keys.length > 20 ? ", …" : ""})`;
  }
  return ` (it is a ${typeof node})`;
}
