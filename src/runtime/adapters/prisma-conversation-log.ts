// The conversation log (R3) in the database: the message table, with each spilled result's spill row.
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Transact } from "../attempt/fence.js";
import { appendRows, readLog } from "../memory/conversation-log.js";
import type { ConversationLog, LogAppend, LoggedMessage } from "../ports/conversation-log.js";

export class PrismaConversationLog implements ConversationLog {
  constructor(private readonly prisma: PrismaClient) {}

  read(conversationId: string): Promise<LoggedMessage[]> {
    return readLog(this.prisma, conversationId);
  }

  append(write: Transact, append: LogAppend): Promise<LoggedMessage[]> {
    return appendRows(write, append);
  }
}
