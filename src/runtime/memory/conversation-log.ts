// The conversation's append-only log (R3) as the model protocol sees it. Writing does no
// processing: each message is stored as it happens; everything else is decided at read time (R4).
// A spilled tool result (R10) is stored whole like any other; its spill row, written in the same
// transaction, makes the read path show the model a preview and a handle instead.
import type { Message, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { appendMessage } from "../../domain/research/conversation-service.js";
import type { ChatMessage, ToolCall } from "../ports/model.js";
import type { NewSpill } from "../ports/spill-store.js";
import { spillPreviewSelect } from "../spill/prisma-spill-store.js";
import { renderSpilled } from "../spill/spill-plan.js";

export type LogEntry =
  | { role: "USER"; content: string }
  | { role: "CONTEXT"; content: string }
  | { role: "ASSISTANT"; content: string | null; toolCalls: ToolCall[] }
  | { role: "TOOL"; toolCallId: string; toolName: string; content: string; spill?: NewSpill | null }
  | { role: "REPAIR"; toolCallId: string; toolName: string; content: string }
  /** R6: a structured summary (JSON, see memory/summary.ts); the context builder injects it, not toChatMessages. */
  | { role: "SUMMARY"; content: string };

const spillView = { select: spillPreviewSelect } as const;

/** A log entry as read: a spilled TOOL result carries its spill. */
export type LoggedMessage = Message & { spill?: Prisma.SpillGetPayload<typeof spillView> | null };

export async function readLog(prisma: PrismaClient, conversationId: string): Promise<LoggedMessage[]> {
  return prisma.message.findMany({ where: { conversationId }, orderBy: { seq: "asc" }, include: { spill: spillView } });
}

/**
 * The log as chat messages. A REPAIR entry stands in for the missing result of its call; a
 * spilled result is shown as its preview, a note and its handle.
 */
export function toChatMessages(log: readonly LoggedMessage[]): ChatMessage[] {
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
      case "REPAIR": {
        const spill = message.spill;
        const content = spill ? renderSpilled({ ...spill, released: spill.releasedAt !== null }) : message.content;
        return [{ role: "tool", toolCallId: message.toolCallId ?? "", content }];
      }
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
      const message = await appendMessage(tx, {
        conversationId,
        runId,
        role: entry.role,
        content: entry.content ?? "",
        ...(entry.role === "ASSISTANT" ? { toolCalls: entry.toolCalls as unknown as Prisma.InputJsonValue } : {}),
        ...(entry.role === "TOOL" || entry.role === "REPAIR" ? { toolCallId: entry.toolCallId, toolName: entry.toolName } : {}),
      });
      if (entry.role === "TOOL" && entry.spill) {
        const { list, ...spill } = entry.spill;
        await tx.spill.create({
          data: {
            ...spill,
            runId,
            conversationId,
            messageId: message.id,
            toolCallId: entry.toolCallId,
            listPath: list?.path ?? null,
            itemCount: list?.itemStarts.length ?? null,
            itemStarts: list?.itemStarts ?? [],
            listEnd: list?.listEnd ?? null,
          },
        });
      }
    }
  });
}
