// A memo of what building a request computes per log entry. Log entries never change (R3), so
// their chat form, their token estimates and a summary's parsed form are remembered across requests.
import type { ChatMessage } from "../ports/model.js";
import { type LoggedMessage, toChatMessages } from "./conversation-log.js";
import type { ViewEntry } from "./micro-compaction.js";
import { type StoredSummary, storedSummarySchema } from "./summary.js";
import { localEstimator, type TokenEstimator } from "./token-estimator.js";

/**
 * A memo of per-message work, keyed by log message id (entries are immutable, R3) and by chat
 * message identity. Bounded: it is cleared when it grows past `maxEntries`.
 */
export const spilled = (message: LoggedMessage) => (message as LoggedMessage).spill ?? null;

export class MemoCache {
  private readonly chats = new Map<string, { chat: ChatMessage[]; tokens: number }>();
  private readonly summaries = new Map<string, StoredSummary | null>();
  private readonly tokens = new WeakMap<ChatMessage, number>();
  constructor(
    readonly estimator: TokenEstimator = localEstimator,
    private readonly maxEntries = 50_000,
  ) {}

  /** An estimator that remembers each chat message's estimate. */
  readonly memoEstimator: TokenEstimator = {
    text: (s) => this.estimator.text(s),
    tools: (t) => this.estimator.tools(t),
    messages: (list) => list.reduce((sum, message) => sum + this.messageTokens(message), 0),
  };

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
      hit = { chat, tokens: chat.reduce((sum, m) => sum + this.messageTokens(m), 0) };
      if (this.chats.size >= this.maxEntries) this.chats.clear();
      this.chats.set(key, hit);
    }
    return { message, chat: hit.chat, tokens: hit.tokens, cleared: [] };
  }

  summary(message: LoggedMessage): StoredSummary | null {
    if (!this.summaries.has(message.id)) {
      let parsed: StoredSummary | null = null;
      try {
        const result = storedSummarySchema.safeParse(JSON.parse(message.content));
        parsed = result.success ? result.data : null;
      } catch {
        parsed = null;
      }
      if (this.summaries.size >= this.maxEntries) this.summaries.clear();
      this.summaries.set(message.id, parsed);
    }
    return this.summaries.get(message.id) ?? null;
  }
}
