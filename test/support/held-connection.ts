// A database's pooled connection held busy while a test does something else: with a pool of one,
// every statement the work sends waits for a connection (and times out at the pool's connect limit).
import type { Database } from "../../src/db/open-database.js";

/** `work`'s result, run while one pooled connection of `db` is held by a session that does nothing. */
export async function whileConnectionHeld<T>(db: Pick<Database, "withSession">, work: () => Promise<T>): Promise<T> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let busy!: () => void;
  const taken = new Promise<void>((resolve) => (busy = resolve));
  const holder = db.withSession(async () => {
    busy();
    await held;
  });
  await taken;
  try {
    return await work();
  } finally {
    release();
    await holder;
  }
}
