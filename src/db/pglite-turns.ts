// The embedded database runs inside this process: PGlite executes each statement synchronously
// and answers through promises, so a caller that sends statement after statement (a recorder
// ingesting, a batch of writes) never gives the event loop a turn. Timers, sockets and every
// other caller's work then wait until it stops: under steady ingestion the retention sweep,
// HTTP requests and leases starved for minutes. A statement or transaction here therefore starts
// only once the event loop has had a turn since the last one started (setImmediate): whatever
// else is due runs between them. One that comes after such a turn already (a turn's reply, sent
// once its answer was read from a socket) starts at once rather than waiting for another: on a
// turn's path each wait cost about 0.17 ms. Callers still take PGlite's one connection in the
// order they asked for it: while any waits, the next waits behind it.
import type { PGlite } from "@electric-sql/pglite";

/** Resolves on the event loop's next turn, after pending I/O and due timers. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const TAKES_TURNS = new Set<PropertyKey>(["query", "exec", "transaction", "sql"]);

/**
 * Whether the event loop had a turn since the last statement started, and how many statements
 * wait for one: shared by every PGlite of the process, whose statements all run on its thread.
 */
const loop = { turned: true, marking: false, waiting: 0 };

/** Notes that a statement starts now: the next one waits for a turn of the event loop first. */
function started(): void {
  loop.turned = false;
  if (loop.marking) return;
  loop.marking = true;
  setImmediate(() => {
    loop.marking = false;
    loop.turned = true;
  });
}

/** Resolves once the statement asked for now may start (at once, when the loop turned and none waits). */
async function turnTaken(): Promise<void> {
  if (!loop.turned || loop.waiting > 0) {
    loop.waiting += 1;
    try {
      await nextTurn();
    } finally {
      loop.waiting -= 1;
    }
  }
  started();
}

/** `pglite` whose statements and transactions each start after a turn of the event loop of their own. */
export function takingTurns(pglite: PGlite): PGlite {
  return new Proxy(pglite, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (!TAKES_TURNS.has(key)) return value.bind(target);
      return async (...args: unknown[]) => {
        await turnTaken();
        return value.apply(target, args);
      };
    },
  });
}
