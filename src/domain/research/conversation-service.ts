// Conversations and their append-only message log (R0, R3).
import { z } from "zod";
import type { Conversation, Message, MessageRole, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import type { Actor } from "../principal/principal-service.js";
import { nonBlank, parseInput } from "../validation.js";
import { TITLE_MAX } from "../validation.js";
import { type Evidence, findEvidence } from "./evidence.js";
import { type ForkInput, forkConversation } from "./conversation-forks.js";

const startInput = z.object({ title: nonBlank(TITLE_MAX) });

/**
 * Appends one message. The conversation row's counter hands out the next seq under a row
 * lock, so concurrent appends to one conversation never collide and never leave a gap.
 */
export async function appendMessage(
  tx: Prisma.TransactionClient,
  message: {
    conversationId: string;
    role: MessageRole;
    content: string;
    runId?: string;
    toolCalls?: Prisma.InputJsonValue;
    toolCallId?: string;
    toolName?: string;
  },
): Promise<Message> {
  const { messageCount } = await tx.conversation.update({
    where: { id: message.conversationId },
    data: { messageCount: { increment: 1 } },
    select: { messageCount: true },
  });
  return tx.message.create({ data: { ...message, seq: messageCount } });
}

export class ConversationService {
  constructor(private readonly deps: { prisma: PrismaClient }) {}

  async startConversation(actor: Actor, input: { title: string }): Promise<Conversation> {
    const { title } = parseInput(startInput, input);
    return this.deps.prisma.conversation.create({ data: { ownerId: actor.principalId, title } });
  }

  /** A fork of one of the actor's conversations at one message of its log (conversation-forks.ts). */
  fork(actor: Actor, input: ForkInput): Promise<Conversation> {
    return forkConversation(this.deps.prisma, actor, input);
  }

  /** The original an evidence id points at, if it lies in the conversation; see findEvidence. */
  evidence(id: string, scope: { conversationId: string } | { ownerId: string }): Promise<Evidence | null> {
    return findEvidence(this.deps.prisma, id, scope);
  }
}
