// The conversation's append-only log (R3) as the model protocol sees it. Writing does no
// processing: each message is stored as it happens; everything else is decided at read time (R4).
import type { Message, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { appendMessage } from "../../domain/research/conversation-service.js";
import type { ChatMessage, ToolCall } from "../ports/model.js";

export type LogEntry =
  | { role: "USER"; content: string }
  | { role: "CONTEXT"; content: string }
  | { role: "ASSISTANT"; content: string | null; toolCalls: ToolCall[] }
  | { role: "TOOL"; toolCallId: string; toolName: string; content: string }
  | { role: "REPAIR"; toolCallId: string; toolName: string; content: string }
  /** R6: a structured summary (JSON, see memory/summary.ts); the context builder injects it, not toChatMessages. */
  | { role: "SUMMARY"; content: string };

export async function readLog(prisma: PrismaClient, conversationId: string): Promise<Message[]> {
  return prisma.message.findMany({ where: { conversationId }, orderBy: { seq: "asc" } });
}

/** The log as chat messages. A REPAIR entry stands in for the missing result of its call. */
export function toChatMessages(log: readonly Message[]): ChatMessage[] {
  return log.flatMap((message): ChatMessage[] => {
    switch (message.role) {
      case "USER":
      case "CONTEXT":
        return [{ role: "user", content: message.content }];
      case "ASSISTANT": {
        const toolCalls = (message.toolCalls as ToolCall[] | null) ?? [];
        return [{ role: "assistant", content: message.content === "" ? null : message.content, ...(toolCalls.length ? { toolCalls } : {}) }];
      }
      case "TOOL":
      case "REPAIR":
        return [{ role: "tool", toolCallId: message.toolCallId ?? "", content: message.content }];
      case "SUMMARY":
        return [];
      default: {
        const unknownRole: never = message.role;
        throw new Error(`unknown message role ${String(unknownRole)}`);
      }
    }
  });
}

/** Appends entries in order, in one transaction. */
export async function appendToLog(
  prisma: PrismaClient,
  { conversationId, runId, entries }: { conversationId: string; runId: string; entries: LogEntry[] },
): Promise<void> {
  if (entries.length === 0) return;
  await prisma.$transaction(async (tx: Prisma.TransactionClient) => {
    for (const entry of entries) {
      await appendMessage(tx, {
        conversationId,
        runId,
        role: entry.role,
        content: entry.content ?? "",
        ...(entry.role === "ASSISTANT" ? { toolCalls: entry.toolCalls as unknown as Prisma.InputJsonValue } : {}),
        ...(entry.role === "TOOL" || entry.role === "REPAIR" ? { toolCallId: entry.toolCallId, toolName: entry.toolName } : {}),
      });
    }
  });
}
