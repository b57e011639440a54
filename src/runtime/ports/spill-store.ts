// The spill port (R10–R12): read-back handles over tool results too large for the model's
// context. A spill never holds the bytes itself — the result is stored once, whole, as its
// TOOL message in the append-only log (R3) — it keeps the handle, the preview and any index
// that makes reads cheap. Spills are created in the same transaction as their message (see
// ConversationLog.append), so a model never meets a large result without its preview after a crash.

import type { Tx } from "../../domain/transaction.js";
import type { ToolCall } from "./model.js";
import type { SpanRef } from "./trace-sink.js";

/** A spill as its store describes it. */
export type SpillInfo = {
  id: string;
  handle: string;
  runId: string;
  conversationId: string;
  messageId: string;
  toolCallId: string;
  toolName: string;
  /** UTF-8 bytes and characters (code points) of the whole result. */
  sizeBytes: number;
  sizeChars: number;
  preview: string;
  strategy: SpillStrategy;
  previewItems: number | null;
  /** The indexed JSON list (null without one, and after release). */
  list: { path: string; itemCount: number } | null;
  createdAt: Date;
  /** Set once the run ended: the handle is revoked, the bytes stay in the log. */
  releasedAt: Date | null;
};

export type SpillStrategy = "head" | "json-items";

/** What is recorded with a TOOL message whose result is spilled. */
export type NewSpill = {
  handle: string;
  toolName: string;
  sizeBytes: number;
  sizeChars: number;
  preview: string;
  strategy: SpillStrategy;
  previewItems: number | null;
  /** Item starts and the list's end as character offsets into the result. */
  list: { path: string; itemStarts: number[]; listEnd: number } | null;
};

export interface SpillStore {
  /** The spill a handle names, released or not; null for an unknown handle. */
  find(handle: string): Promise<SpillInfo | null>;
  /** The run's spills whose handles are still live, oldest first. */
  live(runId: string): Promise<SpillInfo[]>;
  /** Raw UTF-8 bytes [start, end) of the stored result (the caller widens to characters). */
  readBytes(spill: SpillInfo, start: number, end: number): Promise<Uint8Array>;
  /** The exact text of indexed list items [from, to), without parsing the rest. */
  readItems(spill: SpillInfo, from: number, to: number): Promise<string[]>;
  /** The whole stored result. */
  readWhole(spill: SpillInfo): Promise<string>;
  /**
   * Revokes the run's handles and drops their indexes; idempotent. Returns how many it released.
   * With `tx`, inside that transaction (a run settling releases its handles with its status, `at`
   * the time its run row records as its end).
   */
  releaseRun(runId: string, tx?: Tx, at?: Date): Promise<number>;
  /** Releases the handles of runs already in a terminal state; never a live run's. */
  sweep(): Promise<number>;
}

/**
 * Decides, inside the call's span, whether an output is spilled; `shown` is what the trace's
 * TOOL_OUTPUT event then carries instead of the whole output, which is stored once, in the log.
 */
export type PayloadStep = (call: ToolCall, output: string, span: SpanRef) => Promise<{ spill: NewSpill; shown: string } | null>;
