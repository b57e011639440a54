// Evidence (R5): the persisted original behind an evidence id that micro-compaction left in a
// model request in place of a tool result or tool-call arguments. Owner-only, like the runs whose
// logs hold it.
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { MessageNode } from "./conversation.js";
import type { Evidence } from "../../domain/research/evidence.js";
import { mine } from "./owned.js";

const EvidenceKindEnum = builder.enumType("EvidenceKind", {
  values: {
    TOOL_RESULT: { description: "The content of a tool result." },
    TOOL_CALL_ARGUMENTS: { description: "The JSON arguments of one tool call of an assistant message." },
    REPLY_TEXT: { description: "The text of an assistant message, shown to the model cut for length." },
  } as const,
});

const EvidenceRef = builder.objectRef<Evidence>("Evidence").implement({
  description: "The original behind an evidence id, exactly as the conversation log stores it.",
  fields: (t) => ({
    id: t.exposeID("id", {
      description: "The evidence id as it appeared in the model's view, e.g. ev_…: unique across the graph (it names one log entry's part).",
    }),
    kind: t.field({ type: EvidenceKindEnum, resolve: (evidence) => evidence.kind }),
    toolName: t.exposeString("toolName", {
      nullable: true,
      description: 'The tool the call named; "" when the model\'s call named none (it was answered as a call of a tool that does not exist).',
    }),
    toolCallId: t.exposeString("toolCallId", { nullable: true }),
    content: t.exposeString("content", { extensions: largeText(), description: "The original text, byte for byte as persisted." }),
    size: t.int({ description: "Bytes of the content (UTF-8).", resolve: (evidence) => Buffer.byteLength(evidence.content, "utf8") }),
    message: t.field({
      type: MessageNode,
      description: "The log entry that holds the original.",
      resolve: (evidence) => evidence.message,
    }),
  }),
});

builder.queryField("evidence", (t) =>
  t.field({
    type: EvidenceRef,
    nullable: true,
    description:
      "Resolves an evidence id from a compacted model request to its persisted original; null for an unknown id or one in a conversation that is not yours.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => ctx.services.conversations.evidence(String(args.id), mine(ctx)),
  }),
);
