// Forking a conversation (forkConversation): a new conversation of the same owner whose log is
// the parent's up to and including one message — shared through its lineage
// (conversation-lineage.ts), never copied — and then its own. The parent is not written at all:
// its log stays append-only and unchanged, and runs in it go on unaffected. "Regenerate" and
// "edit and resend" are a fork plus admitRun (README, "Regenerate and edit").
//
// A fork is not linked to the parent's workspaces, and an access token that grants the parent
// does not grant it: it is a new conversation of its owner, as startConversation makes one.
import type { Conversation, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { toolCallsOf } from "../json-columns.js";
import { fromStored } from "../text/stored-text.js";
import { ForkDepthLimitError, NotFoundError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { MAX_FORK_DEPTH, forkLineage, lineageOf, logWhere } from "./conversation-lineage.js";

type Tx = Prisma.TransactionClient;

export type ForkInput = { conversationId: string; atMessageId: string };

/**
 * The fork. Another principal's conversation is NotFound; a message that is not in the
 * conversation's log (unknown, of another conversation, or of the parent's log after the point
 * this conversation forked at) is a ValidationError on atMessageId, as is a point inside a
 * tool-call exchange. A fork whose lineage would pass MAX_FORK_DEPTH is a ForkDepthLimitError: a
 * conversation's depth is its lineage's, fixed when it was made, so no concurrent fork can deepen
 * it; a fork at a message it shares with an ancestor counts only the levels that share it.
 */
export async function forkConversation(prisma: PrismaClient, actor: Actor, input: ForkInput): Promise<Conversation> {
  // Nothing of the parent is written or locked: the messages up to the fork point never change.
  const parent = await prisma.conversation.findFirst({ where: { id: input.conversationId, ownerId: actor.principalId } });
  if (!parent) throw new NotFoundError("Conversation", input.conversationId);
  const log = logWhere(parent.id, lineageOf(parent.lineage));
  const at = await prisma.message.findFirst({ where: { AND: [{ id: input.atMessageId }, log] }, select: { seq: true } });
  if (!at) throw new ValidationError([{ field: "atMessageId", message: "is not a message of this conversation's log" }]);
  const lineage = forkLineage(parent, at.seq);
  if (lineage.length > MAX_FORK_DEPTH) throw new ForkDepthLimitError(MAX_FORK_DEPTH);
  await refuseInsideExchange(prisma, log, at.seq);
  return prisma.conversation.create({
    data: {
      ownerId: actor.principalId,
      title: parent.title,
      // The fork's own messages continue the seq after the shared prefix.
      messageCount: at.seq,
      forkedFromConversationId: parent.id,
      forkedAtSeq: at.seq,
      lineage,
    },
  });
}

/**
 * A fork right after an assistant's tool calls and before all their results would give its runs
 * calls without results: refused (fork at the message before the calls, or at their last result).
 * Reads only the prefix's tail from its last assistant message on.
 */
async function refuseInsideExchange(db: Tx | PrismaClient, log: Prisma.MessageWhereInput, seq: number): Promise<void> {
  const assistant = await db.message.findFirst({
    where: { AND: [log, { role: "ASSISTANT", seq: { lte: seq } }] },
    orderBy: { seq: "desc" },
    select: { seq: true, toolCalls: true },
  });
  const calls = toolCallsOf(assistant?.toolCalls ?? null) ?? [];
  if (!assistant || calls.length === 0) return;
  const answered = await db.message.findMany({
    where: { AND: [log, { role: { in: ["TOOL", "REPAIR"] }, seq: { gt: assistant.seq, lte: seq } }] },
    select: { toolCallId: true },
  });
  const results = new Set(answered.map((message) => message.toolCallId));
  if (calls.some((call) => !results.has(fromStored(call.id)))) {
    throw new ValidationError([
      {
        field: "atMessageId",
        message: "falls inside a tool-call exchange (an assistant message's calls without all their results): fork before the calls or after their last result",
      },
    ]);
  }
}

/** The message a fork was made at: the one of its shared prefix with the fork's forkedAtSeq. */
export function forkPointWhere(conversation: Pick<Conversation, "forkedAtSeq" | "lineage">): Prisma.MessageWhereInput | null {
  const parent = lineageOf(conversation.lineage)[0];
  if (conversation.forkedAtSeq === null || !parent) return null;
  // The message with that seq in the parent's log: the parent's own, or an ancestor's it shares.
  return { AND: [logWhere(parent.conversationId, lineageOf(conversation.lineage).slice(1)), { seq: conversation.forkedAtSeq }] };
}
