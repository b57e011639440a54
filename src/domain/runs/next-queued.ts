// The next queued run of a conversation, read when a run of it ended (the worker announces it).
// Runs that started together end together: each end asks, and those asked for while the worker
// handles the same burst of answers (until its event loop next turns) go to the database in one
// statement (batched-reads.ts). A hundred runs ending at once cost one read, or a few, not a
// hundred, each of which took the worker's one thread and a pooled connection while the last
// pieces of the other runs' answers waited. Each read still starts after the end that asked for it
// committed.
import type { PrismaClient } from "../../generated/prisma/client.js";
import { batchedRead } from "../batched-reads.js";

/** `(conversationId) => its next queued run`, the reads asked for in one turn of the event loop sent in one statement. */
export function nextQueuedReader(prisma: PrismaClient): (conversationId: string) => Promise<string | null> {
  return batchedRead({
    readMany: async (conversationIds: readonly string[]) => {
      const rows = await prisma.$queryRaw<{ conversation_id: string; id: string }[]>`
        SELECT DISTINCT ON (conversation_id) conversation_id, id FROM run
         WHERE conversation_id = ANY(${[...conversationIds]}::text[]) AND status = 'QUEUED'
         ORDER BY conversation_id, created_at, id`;
      return new Map(rows.map((row) => [row.conversation_id, row.id]));
    },
    keyOf: (conversationId) => conversationId,
    none: () => null,
    alone: "next turn",
  });
}
