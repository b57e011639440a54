// The conversation log (R3) in the database: the message table, with each spilled result's spill
// row. Writing does no processing: each message is stored as it happens; everything else is
// decided at read time (R4). A spilled tool result (R10) is stored whole like any other; its spill
// row, written in the same transaction, makes the read path show the model a preview and a
// handle instead.
import type { Message, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { type LineageLevel, logWhere, logWhereOf } from "../../domain/research/conversation-lineage.js";
import { appendMessage } from "../../domain/research/conversation-service.js";
import { fromStored, fromStoredJson, toStored, toStoredJson } from "../../domain/text/stored-text.js";
import { appendMessagesStatement } from "../../domain/runs/log-statement.js";
import { inOneStatement, type Transact } from "../../domain/transaction.js";
import type { ConversationLog, LogAppend, LogEntry, LoggedMessage } from "../ports/conversation-log.js";
import type { NewSpill } from "../ports/spill-store.js";
import { spillPreviewSelect } from "./prisma-spill-store.js";

export class PrismaConversationLog implements ConversationLog {
  constructor(private readonly prisma: PrismaClient) {}

  read(conversationId: string, lineage?: readonly LineageLevel[]): Promise<LoggedMessage[]> {
    return readLog(this.prisma, conversationId, lineage);
  }

  append(write: Transact, append: LogAppend): Promise<LoggedMessage[]> {
    return appendRows(write, append);
  }
}

const spillView = { select: spillPreviewSelect } as const;

/**
 * The conversation's log in order, with each entry's text as it was written (stored-text.ts
 * decodes what storage escaped). A fork's log is its ancestors' shared prefixes and then its own
 * messages, read in the same one query (conversation-lineage.ts). A spill's preview stays in its
 * stored form; the model's view renders both safely (forModel).
 */
export async function readLog(prisma: PrismaClient, conversationId: string, lineage?: readonly LineageLevel[]): Promise<LoggedMessage[]> {
  const where = lineage ? logWhere(conversationId, lineage) : await logWhereOf(prisma, conversationId);
  const log = await prisma.message.findMany({ where, orderBy: { seq: "asc" }, include: { spill: spillView } });
  return log.map(decodeMessage);
}

/** A stored log entry with its text decoded. */
export function decodeMessage<M extends Pick<Message, "content" | "toolCalls">>(message: M): M {
  return { ...message, content: fromStored(message.content), toolCalls: fromStoredJson(message.toolCalls) };
}

/** An entry as stored: text from tools, servers and models is stored losslessly, NUL characters included. */
const storedEntry = (entry: LogEntry) => ({
  role: entry.role,
  content: toStored(entry.content ?? ""),
  ...(entry.role === "ASSISTANT" ? { toolCalls: toStoredJson(entry.toolCalls) } : {}),
  ...(entry.role === "TOOL" || entry.role === "REPAIR" ? { toolCallId: entry.toolCallId, toolName: entry.toolName } : {}),
});

/**
 * Appends entries in order, atomically; returns the rows as readLog reads them. Through a write
 * that takes statements (transaction.ts) entries without a spill go as one statement, the fence's
 * check inside it; otherwise, or when that check fails, in one transaction of `write` (an attempt's
 * fenced one, which refuses and says why). A write the route carries (a reply's span end, the
 * trace records made before the entries) goes in that statement.
 */
export async function appendRows(write: Transact, append: LogAppend): Promise<LoggedMessage[]> {
  const { conversationId, runId, entries } = append;
  if (entries.length === 0) return [];
  const spilled = entries.some((entry) => entry.role === "TOOL" && entry.spill);
  return inOneStatement(
    write,
    async (route) => {
      if (spilled) return null;
      const written = await appendMessagesStatement(
        route.db,
        { conversationId, runId, entries: entries.map(storedEntry) },
        route.holder,
        route.carry,
        route.read,
      );
      return written ? written.map((message) => ({ ...decodeMessage(message), spill: null })) : null;
    },
    async (tx: Prisma.TransactionClient) => {
      const rows: LoggedMessage[] = [];
      for (const entry of entries) {
        const message = await appendMessage(tx, { conversationId, runId, ...storedEntry(entry) });
        const spill =
          entry.role === "TOOL" && entry.spill
            ? await createSpill(tx, { conversationId, runId, messageId: message.id, toolCallId: entry.toolCallId, spill: entry.spill })
            : null;
        rows.push({ ...decodeMessage(message), spill });
      }
      return rows;
    },
    // The trace records made before the entries ride in its statement (transaction.ts, inOrder).
    { carries: !spilled },
  );
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
