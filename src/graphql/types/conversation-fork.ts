// Forks of a conversation: forkConversation and Conversation.forkedFrom. The rules live in
// src/domain/research/conversation-forks.ts.
import { ForkDepthLimitError, NotFoundError, ValidationError } from "../../domain/errors.js";
import { forkPointWhere } from "../../domain/research/conversation-forks.js";
import { MAX_FORK_DEPTH } from "../../domain/research/conversation-lineage.js";
import type { Conversation } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { requireIdOfType } from "../global-id.js";
import { ConversationNode } from "./conversation.js";
import { myConversations, ofMyConversation } from "./owned.js";

const ConversationForkRef = builder.objectRef<Conversation>("ConversationFork").implement({
  description: "Where a fork branched off: the conversation it forked from and the last message it shares with it.",
  fields: (t) => ({
    conversation: t.prismaField({
      type: "Conversation",
      nullable: true,
      description: "The conversation forked from (itself perhaps a fork); null only when this credential may not read it.",
      resolve: (query, fork, _args, ctx) =>
        ctx.prisma.conversation.findFirst({ ...query, where: { AND: [myConversations(ctx), { id: fork.forkedFromConversationId! }] } }),
    }),
    message: t.prismaField({
      type: "Message",
      nullable: true,
      description:
        "The message the fork was made at: the last one it shares (a message of the conversation forked from, or of one it shares in turn). Null only when this credential may not read it.",
      resolve: (query, fork, _args, ctx) => {
        const where = forkPointWhere(fork);
        return where ? ctx.prisma.message.findFirst({ ...query, where: { AND: [where, ofMyConversation(ctx)] } }) : null;
      },
    }),
  }),
});

builder.prismaObjectFields(ConversationNode, (t) => ({
  forkedFrom: t.field({
    type: ConversationForkRef,
    nullable: true,
    description: "Set for a fork (forkConversation): where it branched off. Null for a conversation that was started, not forked.",
    resolve: (conversation) => (conversation.forkedFromConversationId ? conversation : null),
  }),
}));

const ForkConversationInput = builder.inputType("ForkConversationInput", {
  fields: (t) => ({
    conversationId: t.id({ required: true }),
    atMessageId: t.id({
      required: true,
      description:
        "The last message the fork shares: any message of the conversation's log (its own or one it shares in turn). A message not in that log, or one right after an assistant's tool calls before all their results, is a ValidationError on atMessageId.",
    }),
  }),
});

const ForkConversationSuccess = builder.objectRef<{ conversation: Conversation }>("ForkConversationSuccess").implement({
  fields: (t) => ({ conversation: t.field({ type: ConversationNode, description: "The fork.", resolve: (result) => result.conversation }) }),
});

builder.mutationField("forkConversation", (t) =>
  t.field({
    type: ForkConversationSuccess,
    description:
      "Branches one of your conversations: a new conversation of yours whose log is this one's up to and including atMessageId — shared, not copied: this conversation's log stays as it is, and its runs go on unaffected — and then its own messages (admitRun with its id). " +
      "Regenerate an answer: fork at the message before the question it answered and admit the question again; edit and resend: the same with the new text. " +
      `Forks of forks work, up to ${MAX_FORK_DEPTH} levels: a fork of a conversation that is already a fork ${MAX_FORK_DEPTH} levels deep is a ForkDepthLimitError. ` +
      "Only the levels whose messages the fork shares count: forking again and again at the same message (regenerating one answer many times, each in the newest branch) does not deepen it. " +
      "The fork is not linked to this conversation's workspaces, and an access token that grants this conversation does not grant the fork (access tokens may not fork).",
    args: { input: t.arg({ type: ForkConversationInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError, ForkDepthLimitError], directResult: true, union: { name: "ForkConversationPayload" } },
    resolve: async (_root, { input }, ctx) => {
      const conversationId = requireIdOfType(String(input.conversationId), "Conversation", "conversationId");
      const atMessageId = requireIdOfType(String(input.atMessageId), "Message", "atMessageId");
      return { conversation: await ctx.services.conversations.fork(ctx.actor, { conversationId, atMessageId }) };
    },
  }),
);
