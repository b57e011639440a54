// One model call's live output on the instance executing it: the text and tool-call arguments so
// far (for subscribers who join mid-call), and the pieces not yet sent, coalesced so that a fast
// model does not cost a frame per token. The first piece after a quiet spell goes out at once:
// coalescing delays only what follows it, by at most `coalesceMs`.
import type { RunOutputFrame, RunOutputPart } from "../../events/topics.js";
import type { ModelCallOutput, OutputEvent } from "../ports/run-output.js";

export const DEFAULT_COALESCE_MS = 30;

export type StreamingCallOptions = {
  runId: string;
  spanId: string;
  /** The run's model call right before this one: null for its first, undefined when not known (RunOutputFrame). */
  follows?: string | null;
  send: (frame: RunOutputFrame) => void;
  coalesceMs?: number;
  /** Milliseconds on a monotonic clock. */
  now?: () => number;
};

export class StreamingCall implements ModelCallOutput {
  readonly runId: string;
  readonly spanId: string;
  private text = "";
  /** Each tool call's argument text so far, by call id, in the order the calls started. */
  private readonly toolArguments = new Map<string, string>();
  private pending: RunOutputPart[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private ended = false;

  constructor(private readonly options: StreamingCallOptions) {
    this.runId = options.runId;
    this.spanId = options.spanId;
  }

  report(event: OutputEvent): void {
    if (this.ended) return;
    if (event.type === "text") this.add(null, event.delta);
    else if (event.type === "tool_call_delta") this.add(event.id, event.delta);
    // A model that does not stream arguments (the scripted one) reports each call whole: it is one delta.
    else if (event.type === "tool_call" && !this.toolArguments.has(event.call.id)) this.add(event.call.id, event.call.arguments);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.flush(true);
  }

  /** Everything the call produced so far, in one frame. */
  snapshot(): RunOutputFrame {
    const parts: RunOutputPart[] = [];
    if (this.text.length > 0) parts.push({ toolCallId: null, offset: 0, text: this.text });
    for (const [toolCallId, text] of this.toolArguments) parts.push({ toolCallId, offset: 0, text });
    return this.frame("SNAPSHOT", parts, this.ended);
  }

  private add(toolCallId: string | null, delta: string): void {
    if (delta.length === 0) return;
    const before = toolCallId === null ? this.text : (this.toolArguments.get(toolCallId) ?? "");
    if (toolCallId === null) this.text += delta;
    else this.toolArguments.set(toolCallId, before + delta);
    const last = this.pending.at(-1);
    if (last && last.toolCallId === toolCallId) last.text += delta;
    else this.pending.push({ toolCallId, offset: before.length, text: delta });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const wait = this.lastSentAt + (this.options.coalesceMs ?? DEFAULT_COALESCE_MS) - this.now();
    if (wait <= 0) this.flush(false);
    else this.timer = setTimeout(() => this.flush(false), wait);
  }

  private flush(final: boolean): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0 && !final) return;
    const parts = this.pending;
    this.pending = [];
    this.lastSentAt = this.now();
    this.options.send(this.frame("DELTA", parts, final));
  }

  private frame(kind: RunOutputFrame["kind"], parts: RunOutputPart[], final: boolean): RunOutputFrame {
    const { follows } = this.options;
    return { runId: this.runId, spanId: this.spanId, kind, parts, final, ...(follows !== undefined && { follows }) };
  }

  private now(): number {
    return this.options.now?.() ?? performance.now();
  }
}
