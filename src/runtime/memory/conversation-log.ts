// The conversation's append-only log (R3) as the model protocol sees it: entries become chat
// messages, interrupted calls are found, and text is made safe to show a strict chat server.
// Reading and writing the log is the ConversationLog port's (adapters/prisma-conversation-log.ts).
import { asRequestMessage } from "../../domain/trace/recorded-request.js";
import { forModel } from "../../domain/text/stored-text.js";
import type { ChatMessage, ToolCall } from "../ports/model.js";
import type { LogEntry, LoggedMessage } from "../ports/conversation-log.js";
import { findDanglingToolCalls } from "./repair.js";
import { renderSpilled } from "../spill/spill-plan.js";

export type { LogEntry, LoggedMessage };

/**
 * The log as chat messages, entry by entry. A spilled result is shown as its preview, a note and
 * its handle. A REPAIR entry is the log's record that a call was interrupted; the note the model
 * sees for it is placed right after the call by `withRepairs` (repair.ts), where the protocol
 * needs it, not where the record was appended.
 */
export function toChatMessages(log: readonly LoggedMessage[]): ChatMessage[] {
  return log.flatMap((message): ChatMessage[] => {
    const spill = message.role === "TOOL" ? message.spill : null;
    if (spill) return [{ role: "tool", toolCallId: message.toolCallId ?? "", content: renderSpilled({ ...spill, released: spill.releasedAt !== null }) }];
    const shown = asRequestMessage(message);
    return shown ? [shown] : [];
  });
}

/**
 * Calls of the log with neither a result nor a repair record: those an interrupted attempt left
 * behind, which the next attempt records as repaired (R7).
 */
export function unrecordedInterruptions(log: readonly LoggedMessage[]): ToolCall[] {
  const answered = log.flatMap((message): ChatMessage[] =>
    message.role === "REPAIR" ? [{ role: "tool", toolCallId: message.toolCallId ?? "", content: "" }] : toChatMessages([message]),
  );
  return findDanglingToolCalls(answered);
}

/**
 * The request as the model is shown it: text from tools, servers and models may hold NUL
 * characters and unpaired surrogates, which strict chat servers reject; they are shown as ␀ and
 * U+FFFD (the log keeps them exactly). Messages without them are passed through as they are.
 */
export function shownToModel(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((message): ChatMessage => {
    const content = message.content === null ? null : forModel(message.content);
    if (message.role === "assistant" && message.toolCalls?.length) {
      const toolCalls = message.toolCalls.map((call) => {
        const args = forModel(call.arguments);
        return args === call.arguments ? call : { ...call, arguments: args };
      });
      if (content === message.content && toolCalls.every((call, i) => call === message.toolCalls![i])) return message;
      return { ...message, content, toolCalls };
    }
    return content === message.content ? message : ({ ...message, content } as ChatMessage);
  });
}
