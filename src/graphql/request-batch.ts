// Batching within one GraphQL request: fields resolved in the same tick (the items of a list)
// ask for their keys one by one, and one load answers them all. A batch belongs to its request
// context, so nothing is shared between requests or principals.
type Pending<T> = { open: boolean; keys: Set<string>; result: Promise<Map<string, T>> };

const batches = new WeakMap<object, Map<string, Pending<unknown>>>();

/** The value for `key` from one `load` of every key asked for under `name` in this tick. */
export async function loadBatched<T>(
  context: object,
  name: string,
  key: string,
  load: (keys: string[]) => Promise<Map<string, T>>,
): Promise<T | undefined> {
  let byName = batches.get(context);
  if (!byName) batches.set(context, (byName = new Map()));
  let pending = byName.get(name) as Pending<T> | undefined;
  if (!pending?.open) {
    const keys = new Set<string>();
    const fresh: Pending<T> = {
      open: true,
      keys,
      result: new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        fresh.open = false;
        return load([...keys]);
      }),
    };
    pending = fresh;
    byName.set(name, fresh as Pending<unknown>);
  }
  pending.keys.add(key);
  return (await pending.result).get(key);
}
