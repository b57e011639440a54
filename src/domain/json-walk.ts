// One walk of JSON-shaped input (what GraphQL input coercion and JSON.parse make: strings, numbers,
// arrays, plain objects) for the first value that has a problem, keeping its own stack: input
// nested as deeply as a client likes never overflows the call stack. The path of keys is built
// only for the value found.

type Entry = { value: unknown; key?: string; parent?: Entry; depth: number };

/**
 * The first value in `value` (depth first, in order) for which `problem` answers something, with
 * the keys leading to it (list items by their index). `problem` sees every value, with its depth
 * (0 for `value` itself); lists and objects are walked into after it answered nothing. Only
 * arrays and plain objects are walked into: any other object (a Date) is a value without items.
 */
export function firstProblem<P>(value: unknown, problem: (item: unknown, depth: number) => P | undefined): { path: string[]; problem: P } | undefined {
  const pending: Entry[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const found = problem(next.value, next.depth);
    if (found !== undefined) {
      const path: string[] = [];
      for (let at: Entry | undefined = next; at?.key !== undefined; at = at.parent) path.unshift(at.key);
      return { path, problem: found };
    }
    if (typeof next.value !== "object" || next.value === null) continue;
    const entries = itemsOf(next.value);
    // Pushed last first, so that they are walked first to last.
    for (let i = entries.length - 1; i >= 0; i--) pending.push({ value: entries[i]![1], key: entries[i]![0], parent: next, depth: next.depth + 1 });
  }
  return undefined;
}

/** The items of a list or a plain object, each with its key; none for any other value. */
export function itemsOf(value: object): [key: string, item: unknown][] {
  if (Array.isArray(value)) return value.map((item, i) => [String(i), item]);
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return [];
  return Object.entries(value);
}
