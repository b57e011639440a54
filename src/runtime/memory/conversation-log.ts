// The conversation's append-only log (R3) as the model protocol sees it. Writing does no
// processing: each message is stored as it happens; everything else is decided at read time (R4).
// A spilled tool result (R10) is stored whole like any other; its spill row, written in the same
// transaction, makes the read path show the model a preview and a handle instead.
import type { Message, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { appendMessage } from "../../domain/research/conversation-service.js";
import { asRequestMessage } from "../../domain/trace/recorded-request.js";
import { forModel, fromStored, fromStoredJson, toStored, toStoredJson } from "../../domain/text/stored-text.js";
import type { Transact } from "../attempt/fence.js";
import type { NewSpill } from "../ports/spill-store.js";
import type { ChatMessage, ToolCall } from "../ports/model.js";
import type { LogAppend, LogEntry, LoggedMessage } from "../ports/conversation-log.js";
import { findDanglingToolCalls } from "./repair.js";
import { spillPreviewSelect } from "../spill/prisma-spill-store.js";
import { renderSpilled } from "../spill/spill-plan.js";

export type { LogEntry, LoggedMessage };

const spillView = { select: spillPreviewSelect } as const;

/**
 * The conversation's log in order, with each entry's text as it was written (stored-text.ts
 * decodes what storage escaped). A spill's preview stays in its stored form; the model's view
 * renders both safely (forModel).
 */
export async function readLog(prisma: PrismaClient, conversationId: string): Promise<LoggedMessage[]> {
  const log = await prisma.message.findMany({ where: { conversationId }, orderBy: { seq: "asc" }, include: { spill: spillView } });
  return log.map(decodeMessage);
}

/** A stored log entry with its text decoded. */
export function decodeMessage<M extends Pick<Message, "content" | "toolCalls">>(message: M): M {
  return { ...message, content: fromStored(message.content), toolCalls: fromStoredJson(message.toolCalls) };
}

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

/** Appends entries in order, in one transaction (an attempt's fenced one); returns their ids. */
export async function appendToLog(write: Transact, append: LogAppend): Promise<string[]> {
  const rows = await appendRows(write, append);
  return rows.map((row) => row.id);
}

/** Appends entries in order, in one transaction (an attempt's fenced one); returns the rows as readLog reads them. */
export async function appendRows(write: Transact, { conversationId, runId, entries }: LogAppend): Promise<LoggedMessage[]> {
  if (entries.length === 0) return [];
  return write(async (tx: Prisma.TransactionClient) => {
    const rows: LoggedMessage[] = [];
    for (const entry of entries) {
      const message = await appendMessage(tx, {
        conversationId,
        runId,
        role: entry.role,
        // Text from tools, servers and models is stored losslessly, NUL characters included.
        content: toStored(entry.content ?? ""),
        ...(entry.role === "ASSISTANT" ? { toolCalls: toStoredJson(entry.toolCalls) } : {}),
        ...(entry.role === "TOOL" || entry.role === "REPAIR" ? { toolCallId: entry.toolCallId, toolName: entry.toolName } : {}),
      });
      const spill =
        entry.role === "TOOL" && entry.spill
          ? await createSpill(tx, { conversationId, runId, messageId: message.id, toolCallId: entry.toolCallId, spill: entry.spill })
          : null;
      rows.push({ ...decodeMessage(message), spill });
    }
    return rows;
  });
}

async function createSpill(
  tx: Prisma.TransactionClient,
  {
    conversationId,
    runId,
    messageId,
    toolCallId,
    spill: { list, ...spill },
  }: { conversationId: string; runId: string; messageId: string; toolCallId: string; spill: NewSpill },
) {
  return tx.spill.create({
    data: {
      ...spill,
      runId,
      conversationId,
      messageId,
      toolCallId,
      listPath: list?.path ?? null,
      itemCount: list?.itemStarts.length ?? null,
      itemStarts: list?.itemStarts ?? [],
      listEnd: list?.listEnd ?? null,
    },
    ...spillView,
  });
}
