// Evidence ids (R5): when micro-compaction clears a tool result or a tool call's arguments from the
// model's view, the replacement names an evidence id that resolves to the persisted original. The id
// is derived from the log entry itself (R3 stores each result exactly once), so no extra table is
// needed and the original comes back byte for byte: `ev_<messageId>` is the content of a tool-result
// message (or the reply text of an assistant message, cut for length), `ev_<messageId>_a<n>` the
// arguments of the n-th call (from 0) of an assistant message.
import { fromStored } from "../text/stored-text.js";
import type { Message, Prisma } from "../../generated/prisma/client.js";
import { toolCallsOf } from "../json-columns.js";
import { logWhereOf } from "./conversation-lineage.js";

export type EvidenceKind = "TOOL_RESULT" | "TOOL_CALL_ARGUMENTS" | "REPLY_TEXT";

export type Evidence = {
  id: string;
  kind: EvidenceKind;
  /** The log entry that holds the original. */
  message: Message;
  toolName: string | null;
  toolCallId: string | null;
  /** The original text, exactly as persisted. */
  content: string;
};

const PREFIX = "ev_";
// Message ids are cuids (letters and digits), so "_" cannot occur inside them.
const EVIDENCE_ID = /^ev_([A-Za-z0-9-]{1,64})(?:_a(\d{1,4}))?$/;

export function resultEvidenceId(messageId: string): string {
  return `${PREFIX}${messageId}`;
}

/** The reply text of an assistant message; the same form as a result's: the message's role tells them apart. */
export function replyTextEvidenceId(messageId: string): string {
  return `${PREFIX}${messageId}`;
}

export function argumentsEvidenceId(messageId: string, callIndex: number): string {
  return `${PREFIX}${messageId}_a${callIndex}`;
}

/** The log entry and part an evidence id points at; null for anything that is not an evidence id. */
export function parseEvidenceId(id: string): { messageId: string; callIndex: number | null } | null {
  const match = EVIDENCE_ID.exec(id.trim());
  if (!match) return null;
  return { messageId: match[1]!, callIndex: match[2] === undefined ? null : Number(match[2]) };
}

type Reader = Pick<Prisma.TransactionClient, "message" | "conversation">;

/**
 * The original an evidence id points at, if it lies in scope: a conversation (the `read_evidence`
 * tool reads its own conversation only) or an owner (GraphQL reads the caller's conversations only).
 * Out of scope, unknown and malformed ids all give null, so nothing is revealed.
 */
export async function findEvidence(db: Reader, id: string, scope: { conversationId: string } | { ownerId: string }): Promise<Evidence | null> {
  const ref = parseEvidenceId(id);
  if (!ref) return null;
  const message = await db.message.findFirst({
    where: {
      id: ref.messageId,
      // A fork's run reads the evidence of the prefix it shares as its own.
      ...("conversationId" in scope ? await logWhereOf(db, scope.conversationId) : { conversation: { ownerId: scope.ownerId } }),
    },
  });
  if (!message) return null;
  if (ref.callIndex === null && message.role === "ASSISTANT") {
    const content = fromStored(message.content);
    return { id: replyTextEvidenceId(message.id), kind: "REPLY_TEXT", message, toolName: null, toolCallId: null, content };
  }
  if (ref.callIndex === null) {
    if (message.role !== "TOOL") return null;
    const content = fromStored(message.content);
    return { id: resultEvidenceId(message.id), kind: "TOOL_RESULT", message, toolName: message.toolName, toolCallId: message.toolCallId, content };
  }
  if (message.role !== "ASSISTANT") return null;
  const call = (toolCallsOf(message.toolCalls) ?? [])[ref.callIndex];
  if (!call) return null;
  return {
    id: argumentsEvidenceId(message.id, ref.callIndex),
    kind: "TOOL_CALL_ARGUMENTS",
    message,
    toolName: fromStored(call.name),
    toolCallId: fromStored(call.id),
    content: fromStored(call.arguments),
  };
}
