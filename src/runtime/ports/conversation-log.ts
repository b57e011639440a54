// The conversation-log port: the append-only log of a conversation (R3) as the runtime reads and
// writes it. Appending is a write of the attempt, so it goes through the attempt's fenced
// transaction, and it returns the rows it wrote: whoever holds the log keeps it up to date
// without reading it again.
import type { JsonValue } from "../../domain/json-columns.js";
import type { Transact } from "../../domain/transaction.js";
import type { LineageLevel } from "../../domain/research/conversation-lineage.js";
import type { ToolCall } from "./model.js";
import type { NewSpill } from "./spill-store.js";

export type LogEntry =
  | { role: "USER"; content: string }
  | { role: "CONTEXT"; content: string }
  | { role: "ASSISTANT"; content: string | null; toolCalls: ToolCall[] }
  | { role: "TOOL"; toolCallId: string; toolName: string; content: string; spill?: NewSpill | null }
  | { role: "REPAIR"; toolCallId: string; toolName: string; content: string }
  /** R6: a structured summary (JSON, see memory/summary.ts); the context builder injects it, not toChatMessages. */
  | { role: "SUMMARY"; content: string };

/** What the model is shown of a spilled result instead of the result (R10). */
export type SpillPreview = {
  handle: string;
  toolName: string;
  sizeBytes: number;
  sizeChars: number;
  preview: string;
  strategy: string;
  previewItems: number | null;
  listPath: string | null;
  itemCount: number | null;
  releasedAt: Date | null;
};

/** Who wrote a log entry: the person, the workspace (context), the model, a tool, crash repair, or a summary. */
export type MessageRole = LogEntry["role"];

/** A log entry as read, its text decoded: a spilled TOOL result carries its spill. */
export type LoggedMessage = {
  id: string;
  conversationId: string;
  seq: number;
  role: MessageRole;
  content: string;
  /** ASSISTANT: the tool calls it asked for, as stored (read with `toolCallsOf`). */
  toolCalls: JsonValue;
  toolCallId: string | null;
  toolName: string | null;
  runId: string | null;
  createdAt: Date;
  spill?: SpillPreview | null;
};

export type LogAppend = { conversationId: string; runId: string; entries: readonly LogEntry[] };

export interface ConversationLog {
  /** The conversation's log in order (by seq); given its lineage (which never changes), in one read. */
  read(conversationId: string, lineage?: readonly LineageLevel[]): Promise<LoggedMessage[]>;
  /** Appends entries in order, in one transaction of `write`; returns the rows written, as `read` would. */
  append(write: Transact, append: LogAppend): Promise<LoggedMessage[]>;
}
