// Detaching and dropping a week partition of a trace table (PostgreSQL).
//
// Plain DETACH, not DETACH … CONCURRENTLY: the concurrent form refuses a table that has a DEFAULT
// partition, and the default partition is what keeps inserts from ever failing for want of a week.
// Plain DETACH takes an ACCESS EXCLUSIVE lock on the table for a catalog change of a few
// milliseconds; the danger is the wait for it, during which new writers queue behind it. So each
// try waits at most LOCK_TIMEOUT_MS before giving up and trying again a little later: writers
// stall at most that long, and the detach gets in between their transactions. Detach and drop are
// one transaction: after a crash the partition is either still attached or gone, never left over.
import type { SqlSession } from "../sql-session.js";
import { inTransaction } from "./partition-tables.js";

const LOCK_TIMEOUT_MS = 200;
const LOCK_NOT_AVAILABLE = "55P03";

export type DropOptions = { lockTimeoutMs?: number; attempts?: number; pauseMs?: number };

/** Detaches `partition` from `table` and drops it; returns false when it no longer exists. */
export async function detachAndDrop(
  session: SqlSession,
  table: string,
  partition: string,
  { lockTimeoutMs = LOCK_TIMEOUT_MS, attempts = 300, pauseMs = 100 }: DropOptions = {},
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inTransaction(session, async () => {
        const [present] = await session.query<{ attached: boolean | null }>(
          `SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1)) AS attached`,
          [`public.${partition}`],
        );
        if (!present?.attached) return false;
        await session.exec(`SET LOCAL lock_timeout = '${Math.max(1, Math.round(lockTimeoutMs))}ms'`);
        await session.exec(`ALTER TABLE "${table}" DETACH PARTITION "${partition}"`);
        await session.exec(`DROP TABLE "${partition}"`);
        return true;
      });
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}
