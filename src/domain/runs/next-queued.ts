// The next queued run of a conversation, read when a run of it ended (the worker announces it).
// Runs that started together end together: each end asks, and those asked for while the worker
// handles the same burst of answers (until its event loop next checks: setImmediate) go to the
// database in one statement. A hundred runs ending at once cost one read, or a few, not a hundred,
// each of which took the worker's one thread and a pooled connection while the last pieces of the
// other runs' answers waited. Each read still starts after the end that asked for it committed.
import type { PrismaClient } from "../../generated/prisma/client.js";

type Waiter = { conversationId: string; resolve: (id: string | null) => void; reject: (error: unknown) => void };

/** `(conversationId) => its next queued run`, the reads asked for in one turn of the event loop sent in one statement. */
export function nextQueuedReader(prisma: PrismaClient): (conversationId: string) => Promise<string | null> {
  let pending: Waiter[] | undefined;
  const send = (waiters: Waiter[]) => {
    const ids = [...new Set(waiters.map(({ conversationId }) => conversationId))];
    prisma.$queryRaw<{ conversation_id: string; id: string }[]>`
      SELECT DISTINCT ON (conversation_id) conversation_id, id FROM run
       WHERE conversation_id = ANY(${ids}::text[]) AND status = 'QUEUED'
       ORDER BY conversation_id, created_at, id`.then(
      (rows) => {
        const next = new Map(rows.map((row) => [row.conversation_id, row.id]));
        for (const { conversationId, resolve } of waiters) resolve(next.get(conversationId) ?? null);
      },
      (error: unknown) => {
        for (const { reject } of waiters) reject(error);
      },
    );
  };
  return (conversationId) =>
    new Promise((resolve, reject) => {
      if (!pending) {
        const waiters: Waiter[] = [];
        pending = waiters;
        setImmediate(() => {
          pending = undefined;
          send(waiters);
        });
      }
      pending.push({ conversationId, resolve, reject });
    });
}
