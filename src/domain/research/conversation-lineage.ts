// A conversation's log across forks (forkConversation). A fork shares its ancestors' logs up to
// the fork point instead of copying them: the shared messages stay rows of the conversation that
// wrote them, and the fork's own messages continue the seq after the fork point. The conversation
// row keeps its ancestors with each one's last shared seq (`lineage`, nearest first, fixed at the
// fork), so the whole log is one query — one index range of (conversation_id, seq) per level —
// ordered by seq, and no read walks the chain. Every reader of a log by conversation goes
// through here: the runtime's log, Conversation.messages, the evidence a run may read.
import type { Prisma } from "../../generated/prisma/client.js";

/**
 * The most ancestors a conversation's lineage may have: a fork of a conversation that already has
 * as many is refused (ForkDepthLimitError). Only ancestors whose messages the log shares count,
 * and the parent (forkLineage): forking again and again at the same message does not deepen it. Each level is one more index range in every read of the
 * log; the lineage is fixed when the fork is made, so concurrent forks cannot pass it together.
 */
export const MAX_FORK_DEPTH = 32;

/** One ancestor whose messages a log shares: those of `conversationId` with seq ≤ `uptoSeq`. */
export type LineageLevel = { conversationId: string; uptoSeq: number };

type Reader = Pick<Prisma.TransactionClient, "conversation">;

/** The stored lineage column as levels (a malformed one shares nothing rather than something wrong). */
export function lineageOf(column: unknown): LineageLevel[] {
  if (!Array.isArray(column)) return [];
  return column.flatMap((level) =>
    level && typeof level === "object" && typeof level.conversationId === "string" && Number.isInteger(level.uptoSeq)
      ? [{ conversationId: level.conversationId, uptoSeq: level.uptoSeq as number }]
      : [],
  );
}

/** The messages of a conversation's log given its lineage: its own, then each ancestor's shared prefix. */
export function logWhere(conversationId: string, lineage: readonly LineageLevel[]): Prisma.MessageWhereInput {
  if (lineage.length === 0) return { conversationId };
  return { OR: [{ conversationId }, ...lineage.map((level) => ({ conversationId: level.conversationId, seq: { lte: level.uptoSeq } }))] };
}

/** The where of a conversation's whole log, reading its lineage (one primary-key read; a root's is empty). */
export async function logWhereOf(db: Reader, conversationId: string): Promise<Prisma.MessageWhereInput> {
  const row = await db.conversation.findUnique({ where: { id: conversationId }, select: { lineage: true } });
  return logWhere(conversationId, lineageOf(row?.lineage));
}

/**
 * The lineage of a fork of `parent` at `atSeq`: the parent up to that seq, then the parent's own
 * ancestors, each capped at that seq too (a fork inside the parent's shared prefix must not take
 * an ancestor's messages written after the point it forks at).
 *
 * An ancestor whose capped seq is at or below its own fork point shares none of its messages (they
 * all come after that point) and is left out. Its own fork point is not stored with it, but the
 * next level's seq is that point capped at the same seqs, so such a level is exactly one whose seq
 * is at or below the next one's (and the dropped level's seq equals the next's, so the rule holds
 * again for the level above it). The parent stays first whatever it shares: the fork point is read
 * through it (forkPointWhere). So regenerating an answer again and again, each time in the newest
 * branch, keeps the lineage at two levels instead of one more per regeneration.
 */
export function forkLineage(parent: { id: string; lineage: unknown }, atSeq: number): LineageLevel[] {
  const inherited = lineageOf(parent.lineage).map((level) => ({ ...level, uptoSeq: Math.min(level.uptoSeq, atSeq) }));
  const sharing = inherited.filter((level, i) => i === inherited.length - 1 || level.uptoSeq > inherited[i + 1]!.uptoSeq);
  return [{ conversationId: parent.id, uptoSeq: atSeq }, ...sharing];
}
