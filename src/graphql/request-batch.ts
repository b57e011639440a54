// Batching within one GraphQL request, for resolvers that are not a loadable field of their own
// (fields declare theirs with plugin-dataloader's `t.loadable`, see builder.ts): fields resolved
// together (the items of a list) ask for their keys one by one, and one load answers them all.
// A loader belongs to its request context, so nothing is shared between requests or principals.
import { createContextCache } from "@pothos/core";
import DataLoader from "dataloader";

/**
 * A batch collects keys until the I/O phase after the current one, not just until the end of the
 * current promise jobs (DataLoader's default): the items of a list are resolved over several
 * promise ticks when their parents come from different loads, and still go together. Nothing is
 * cached past its batch: a later mutation of the same document may change what a field reads.
 * Loads receive each key once (DataLoader without a cache passes repeats on).
 */
export const REQUEST_BATCH = { cache: false, batchScheduleFn: (dispatch: () => void) => setImmediate(dispatch) } as const;

const loaders = createContextCache(() => new Map<string, DataLoader<string, unknown>>());

/** The value for `key` from one `load` of every key asked for under `name` in this batch. */
export async function loadBatched<T>(context: object, name: string, key: string, load: (keys: string[]) => Promise<Map<string, T>>): Promise<T | undefined> {
  const byName = loaders(context);
  let loader = byName.get(name) as DataLoader<string, T | undefined> | undefined;
  if (!loader) {
    loader = new DataLoader<string, T | undefined>(async (keys) => {
      const found = await load([...new Set(keys)]);
      return keys.map((each) => found.get(each));
    }, REQUEST_BATCH);
    byName.set(name, loader as DataLoader<string, unknown>);
  }
  return loader.load(key);
}
