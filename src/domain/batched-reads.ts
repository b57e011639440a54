// The reads a run makes when it starts — its skills, its principal's MCP servers, its frozen
// materials — are of the same kinds for every run, and the runs of one claim start together (the
// worker begins them in one loop: claim-passes.ts). Reads asked for while those runs begin go to
// the database together, one statement per kind for the whole claim, right after the last of them
// began: a claim of 64 runs costs one read of each kind, not 64, each of which took the worker's
// one thread and a pooled connection between the claim and the runs' first model requests. Each
// run still reads what was committed before it started. A read asked for outside such a start (a
// run begun alone, the API) goes at once, as it always did — or, for a read of the kind that many
// runs ending together ask for (their conversations' next queued runs: runs/next-queued.ts), with
// the others asked for until the event loop's next turn.

type Waiter<K, V> = { key: K; resolve: (value: V) => void; reject: (error: unknown) => void };

/** The reads of each kind asked for while `together` runs, sent when it returns. */
let collecting: Set<() => void> | undefined;

/** Runs `start`; the batched reads it asks for (batchedRead) are sent together when it returns. */
export function together<T>(start: () => T): T {
  if (collecting) return start();
  const batches = new Set<() => void>();
  collecting = batches;
  try {
    return start();
  } finally {
    collecting = undefined;
    for (const send of batches) send();
  }
}

/**
 * `read(key)`: the value of `key` — inside `together`, from one `readMany` of every key asked for
 * there (each key once); outside it, from a `readMany` of that key alone, at once, or with
 * `alone: "next turn"` of every key asked for until the event loop's next turn. `none()` for a
 * key `readMany` did not answer. Nothing is kept past its read.
 */
export function batchedRead<K, V>({
  readMany,
  keyOf,
  none,
  alone = "at once",
}: {
  readMany: (keys: readonly K[]) => Promise<ReadonlyMap<string, V>>;
  keyOf: (key: K) => string;
  none: () => V;
  alone?: "at once" | "next turn";
}): (key: K) => Promise<V> {
  let pending: Waiter<K, V>[] | undefined;
  const send = (waiters: Waiter<K, V>[]) => {
    const keys = new Map(waiters.map(({ key }) => [keyOf(key), key]));
    readMany([...keys.values()]).then(
      (found) => {
        for (const { key, resolve } of waiters) resolve(found.get(keyOf(key)) ?? none());
      },
      (error: unknown) => {
        for (const { reject } of waiters) reject(error);
      },
    );
  };
  return (key) =>
    new Promise<V>((resolve, reject) => {
      if (!collecting && alone === "at once") return send([{ key, resolve, reject }]);
      if (!pending) {
        const waiters: Waiter<K, V>[] = [];
        pending = waiters;
        const sendAll = () => {
          pending = undefined;
          send(waiters);
        };
        if (collecting) collecting.add(sendAll);
        else setImmediate(sendAll);
      }
      pending.push({ key, resolve, reject });
    });
}

/** `rows` grouped under `keyOf` of each, in their order. */
export function groupedBy<T>(rows: readonly T[], keyOf: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const key = keyOf(row);
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return groups;
}
