// Conversations (sessions) and their append-only messages.
import { paged } from "../list-connection.js";
import { fromStored } from "../../domain/text/stored-text.js";
import { ValidationError } from "../../domain/errors.js";
import type { Conversation } from "../../generated/prisma/client.js";
import { MessageRole } from "../../generated/prisma/enums.js";
import { lineageOf, logWhere } from "../../domain/research/conversation-lineage.js";
import { SEQ_TYPE_NOTE } from "../sequence.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { myConversations, newestFirst, ofMyConversation, ownedBy } from "./owned.js";

const MessageRoleEnum = builder.enumType(MessageRole, { name: "MessageRole" });

export const MessageNode = builder.prismaNode("Message", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...ofMyConversation(ctx) }),
  description: "One entry of a conversation's append-only log.",
  fields: (t) => ({
    seq: t.string({
      description: `Position in the conversation, from 1, without gaps (a fork's own messages continue after the message it forked at). ${SEQ_TYPE_NOTE}`,
      resolve: (message) => String(message.seq),
    }),
    role: t.expose("role", { type: MessageRoleEnum }),
    content: t.string({
      extensions: largeText(),
      description: "The entry's text exactly as it was written, NUL characters and unpaired surrogates included.",
      resolve: (message) => fromStored(message.content),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    run: t.relation("run", { nullable: true, description: "The run (round) the message belongs to." }),
  }),
});

export const ConversationNode = builder.prismaNode("Conversation", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  description: "A session: successive runs of one line of research continue its log.",
  fields: (t) => ({
    title: t.exposeString("title"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    // Pages are read with their own query, so SQL limits them (see graphql/types/owned.ts).
    messages: t.prismaConnection(
      {
        type: "Message",
        description:
          "The log, oldest first. A fork's log starts with the messages it shares with the conversation it forked from (up to and including forkedFrom.message; they stay that conversation's messages), then its own.",
        cursor: "id",
        ...paged({ defaultSize: 50, maxSize: 200 }),
        resolve: (query, conversation, _args, ctx) =>
          ctx.prisma.message.findMany({ ...query, where: logWhere(conversation.id, lineageOf(conversation.lineage)), orderBy: { seq: "asc" } }),
      },
      {
        name: "MessageConnection",
        fields: countFields<Conversation>((conversation, ctx) => boundedCount(ctx.prisma.message, logWhere(conversation.id, lineageOf(conversation.lineage)))),
      },
      { name: "MessageEdge" },
    ),
    runs: t.prismaConnection(
      {
        type: "Run",
        description: "Its runs, newest first.",
        cursor: "id",
        ...paged({ defaultSize: 20, maxSize: 100 }),
        resolve: (query, conversation, _args, ctx) => ctx.prisma.run.findMany({ ...query, where: { conversationId: conversation.id }, orderBy: newestFirst }),
      },
      {
        name: "ConversationRunConnection",
        fields: countFields<{ id: string }>((conversation, ctx) => boundedCount(ctx.prisma.run, { conversationId: conversation.id })),
      },
      { name: "ConversationRunEdge" },
    ),
  }),
});

builder.queryField("conversations", (t) =>
  t.prismaConnection(
    {
      type: "Conversation",
      description: "Your conversations, newest first.",
      cursor: "id",
      ...paged({ defaultSize: 20, maxSize: 100 }),
      resolve: (query, _root, _args, ctx) => ctx.prisma.conversation.findMany({ ...query, where: myConversations(ctx), orderBy: newestFirst }),
    },
    { name: "ConversationConnection", fields: countFields<unknown>((_root, ctx) => boundedCount(ctx.prisma.conversation, myConversations(ctx))) },
    { name: "ConversationEdge" },
  ),
);

const StartConversationInput = builder.inputType("StartConversationInput", {
  fields: (t) => ({ title: t.string({ required: true }) }),
});

const StartConversationSuccess = builder.objectRef<{ conversation: Conversation }>("StartConversationSuccess").implement({
  fields: (t) => ({ conversation: t.field({ type: ConversationNode, resolve: (result) => result.conversation }) }),
});

builder.mutationField("startConversation", (t) =>
  t.field({
    type: StartConversationSuccess,
    args: { input: t.arg({ type: StartConversationInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "StartConversationPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      conversation: await ctx.services.conversations.startConversation(ctx.actor, input),
    }),
  }),
);
