// A memo of what building a request computes per log entry. Log entries never change (R3), so
// their chat form, their token estimates and a summary's parsed form are remembered across requests.
import type { ChatMessage, ToolSchema } from "../ports/model.js";
import { type LoggedMessage, toChatMessages } from "./conversation-log.js";
import type { ViewEntry } from "./micro-compaction.js";
import { type StoredSummary, storedSummarySchema } from "./summary.js";
import { localEstimator, type TokenEstimator } from "./token-estimator.js";

/** A node of the tool-list memo: the tokens of the list that ends here, and the lists that go on from it. */
type ToolListNode = { tokens?: number; next?: WeakMap<ToolSchema, ToolListNode> };

export const spilled = (message: LoggedMessage) => (message as LoggedMessage).spill ?? null;

/** The memo's default bound: what it may hold, counted as the UTF-16 bytes of the text it keeps. */
export const MEMO_MAX_BYTES = 64 * 1024 * 1024;
/** A per-entry overhead (map entry, objects) counted on top of the text. */
const ENTRY_OVERHEAD_BYTES = 128;

/** The bytes a chat message's text takes in memory (UTF-16), roughly: what the memo keeps alive. */
export function chatBytes(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const message of messages) {
    chars += message.content?.length ?? 0;
    if (message.role === "tool") chars += message.toolCallId.length;
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) chars += call.id.length + call.name.length + call.arguments.length;
  }
  return chars * 2 + ENTRY_OVERHEAD_BYTES;
}

/**
 * A memo of per-message work, keyed by log message id (entries are immutable, R3) and by chat
 * message identity. Bounded by bytes, not entries: a tool's output can be megabytes, and a memo
 * that keeps a few hundred of them alive after their runs ended holds the heap. Past
 * `maxBytes` (or `maxEntries`) the oldest entries go first; an entry larger than a quarter of
 * the bound is computed each time and not kept.
 */
export class MemoCache {
  private readonly chats = new Map<string, { chat: ChatMessage[]; tokens: number; bytes: number }>();
  private readonly summaries = new Map<string, { parsed: StoredSummary | null; bytes: number }>();
  private readonly tokens = new WeakMap<ChatMessage, number>();
  private heldBytes = 0;
  constructor(
    readonly estimator: TokenEstimator = localEstimator,
    private readonly maxEntries = 50_000,
    private readonly maxBytes = MEMO_MAX_BYTES,
  ) {}

  /** What the memo holds now, in bytes as it counts them. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** An estimator that remembers each chat message's estimate. */
  readonly memoEstimator: TokenEstimator = {
    text: (s) => this.estimator.text(s),
    tools: (t) => this.toolTokens(t),
    messages: (list) => list.reduce((sum, message) => sum + this.messageTokens(message), 0),
  };

  /**
   * The tool schemas' tokens, counted once per list of schema objects: a run offers the same
   * tools turn after turn (the same schema objects, in a new list each time), runs offer the same
   * built-in tools (one schema object each), and the JSON of a list is a few kilobytes to write
   * and scan. Lists are remembered by their schemas' identity, in order, in a tree of weak maps:
   * a list whose schemas are gone (a finished run's MCP tools) is forgotten with them.
   */
  private toolTokens(tools: readonly ToolSchema[]): number {
    let node = this.toolLists;
    for (const schema of tools) {
      node.next ??= new WeakMap();
      let next = node.next.get(schema);
      if (!next) node.next.set(schema, (next = {}));
      node = next;
    }
    node.tokens ??= this.estimator.tools(tools);
    return node.tokens;
  }

  private readonly toolLists: ToolListNode = {};

  messageTokens(message: ChatMessage): number {
    let tokens = this.tokens.get(message);
    if (tokens === undefined) {
      tokens = this.estimator.messages([message]);
      this.tokens.set(message, tokens);
    }
    return tokens;
  }

  /** The entry's chat messages as the log shows them (toChatMessages of it alone) and their tokens. */
  view(message: LoggedMessage): ViewEntry {
    // A spilled result reads differently once its handle is released; nothing else changes.
    const key = spilled(message)?.releasedAt ? `${message.id}:released` : message.id;
    let hit = this.chats.get(key);
    if (!hit) {
      const chat = toChatMessages([message]);
      hit = { chat, tokens: chat.reduce((sum, m) => sum + this.messageTokens(m), 0), bytes: chatBytes(chat) };
      if (this.makeRoom(hit.bytes)) this.chats.set(key, hit);
    }
    return { message, chat: hit.chat, tokens: hit.tokens, cleared: [] };
  }

  /** Evicts the oldest entries until `bytes` more fit; false when an entry that large is not kept. */
  private makeRoom(bytes: number): boolean {
    if (bytes > this.maxBytes / 4) return false;
    const over = () => this.heldBytes + bytes > this.maxBytes || this.chats.size + this.summaries.size >= this.maxEntries;
    for (const [key, entry] of this.chats) {
      if (!over()) break;
      this.chats.delete(key);
      this.heldBytes -= entry.bytes;
    }
    for (const [key, entry] of this.summaries) {
      if (!over()) break;
      this.summaries.delete(key);
      this.heldBytes -= entry.bytes;
    }
    this.heldBytes += bytes;
    return true;
  }

  summary(message: LoggedMessage): StoredSummary | null {
    const hit = this.summaries.get(message.id);
    if (hit) return hit.parsed;
    let parsed: StoredSummary | null = null;
    try {
      const result = storedSummarySchema.safeParse(JSON.parse(message.content));
      parsed = result.success ? result.data : null;
    } catch {
      parsed = null;
    }
    const bytes = message.content.length * 2 + ENTRY_OVERHEAD_BYTES;
    if (this.makeRoom(bytes)) this.summaries.set(message.id, { parsed, bytes });
    return parsed;
  }
}
