// The embedded database runs inside this process: PGlite executes each statement synchronously
// and answers through promises, so a caller that sends statement after statement (a recorder
// ingesting, a batch of writes) never gives the event loop a turn. Timers, sockets and every
// other caller's work then wait until it stops: under steady ingestion the retention sweep,
// HTTP requests and leases starved for minutes. Each statement and transaction here first
// waits for the event loop's next turn (setImmediate), so whatever else is due runs between
// them; callers still take PGlite's one connection in the order they asked for it.
import type { PGlite } from "@electric-sql/pglite";

/** Resolves on the event loop's next turn, after pending I/O and due timers. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const TAKES_TURNS = new Set<PropertyKey>(["query", "exec", "transaction", "sql"]);

/** `pglite` whose statements and transactions each start on a turn of the event loop of their own. */
export function takingTurns(pglite: PGlite): PGlite {
  return new Proxy(pglite, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (!TAKES_TURNS.has(key)) return value.bind(target);
      return async (...args: unknown[]) => {
        await nextTurn();
        return value.apply(target, args);
      };
    },
  });
}
