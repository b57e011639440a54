// What one runOutput subscriber has delivered of each running model call, so that every piece of
// a call's output is delivered exactly once and in order: pieces carry their character offset, a
// piece that overlaps what was delivered is cut, and a piece after a gap (the subscriber joined
// mid-call) waits for the call's snapshot, which brings everything from the start in one piece.
import type { RunOutputFrame, RunOutputPart } from "../../events/topics.js";

/** A piece ready to deliver: the call's text (toolCallId null) or one tool call's arguments. */
export type DeliveredPiece = { spanId: string; toolCallId: string | null; text: string };

type Call = {
  /** Characters delivered, per stream (the text: key null; each tool call: its id). */
  delivered: Map<string | null, number>;
  /** Pieces that came after a gap, in order, waiting for the snapshot. */
  held: RunOutputPart[];
  /** A snapshot was asked for and has not come. */
  awaitingSnapshot: boolean;
  /** Characters of the call the subscriber had before it (re)subscribed: the snapshot skips them. */
  had: number;
  /** The call's last frame (or a snapshot taken after it ended) was placed. */
  ended: boolean;
};

export class LiveCalls {
  private readonly calls = new Map<string, Call>();
  /** Calls whose MESSAGE_DONE went out: whatever still arrives for them is late and dropped. */
  private readonly done = new Set<string>();

  /**
   * A call that was running before the subscriber listened: only its snapshot can start it. `had`:
   * how many of its characters the subscriber already has (from the position it resumed after).
   */
  expectSnapshot(spanId: string, had = 0): void {
    // A call delivered from its start (its frames came before its running was read) needs none.
    if (this.done.has(spanId) || this.deliveredOf(spanId) > 0) return;
    const call = this.callOf(spanId);
    call.awaitingSnapshot = true;
    call.had = had;
  }

  /** Characters delivered of the calls still running (a run has one at a time). */
  runningDelivered(): number {
    let total = 0;
    for (const spanId of this.calls.keys()) total += this.deliveredOf(spanId);
    return total;
  }

  /** Characters of a call delivered so far, over its text and all its tool calls' arguments. */
  deliveredOf(spanId: string): number {
    let total = 0;
    for (const count of this.calls.get(spanId)?.delivered.values() ?? []) total += count;
    return total;
  }

  /** The pieces a frame adds, in order. */
  place(frame: RunOutputFrame): DeliveredPiece[] {
    if (this.done.has(frame.spanId)) return [];
    const known = this.calls.get(frame.spanId);
    // A snapshot this subscriber did not wait for brings nothing it needs: it has the call from its
    // first delta, or the call ended before it listened (the message is in the log).
    if (frame.kind === "SNAPSHOT" && !known?.awaitingSnapshot) return [];
    const call = known ?? this.callOf(frame.spanId);
    const pieces: DeliveredPiece[] = [];
    if (frame.kind === "SNAPSHOT") {
      call.awaitingSnapshot = false;
      skipHad(call, frame.parts);
      for (const part of frame.parts) this.deliver(frame.spanId, call, part, pieces);
      const held = call.held;
      call.held = [];
      for (const part of held) this.deliverOrHold(frame.spanId, call, part, pieces);
    } else {
      for (const part of frame.parts) this.deliverOrHold(frame.spanId, call, part, pieces);
    }
    if (frame.final) call.ended = true;
    if (call.held.length > 0) call.awaitingSnapshot = true;
    return pieces;
  }

  /** Whether a call has delivered all its output (or nothing of it was ever seen: nothing to wait for). */
  complete(spanId: string): boolean {
    const call = this.calls.get(spanId);
    return !call || (call.ended && call.held.length === 0);
  }

  /** Whether some call waits for a snapshot, which must be asked for. */
  awaitingSnapshot(): boolean {
    for (const call of this.calls.values()) if (call.awaitingSnapshot) return true;
    return false;
  }

  /** Whether the call's MESSAGE_DONE went out. */
  finished(spanId: string): boolean {
    return this.done.has(spanId);
  }

  /** The call's MESSAGE_DONE went out. */
  finish(spanId: string): void {
    this.calls.delete(spanId);
    this.done.add(spanId);
  }

  private callOf(spanId: string): Call {
    let call = this.calls.get(spanId);
    if (!call) this.calls.set(spanId, (call = { delivered: new Map(), held: [], awaitingSnapshot: false, had: 0, ended: false }));
    return call;
  }

  private deliverOrHold(spanId: string, call: Call, part: RunOutputPart, pieces: DeliveredPiece[]): void {
    if (call.held.length > 0 || part.offset > (call.delivered.get(part.toolCallId) ?? 0)) call.held.push(part);
    else this.deliver(spanId, call, part, pieces);
  }

  /** Delivers what of `part` is new; `part` starts at or before the end of what was delivered. */
  private deliver(spanId: string, call: Call, part: RunOutputPart, pieces: DeliveredPiece[]): void {
    const delivered = call.delivered.get(part.toolCallId) ?? 0;
    const fresh = part.text.slice(delivered - part.offset);
    if (fresh.length === 0) return;
    call.delivered.set(part.toolCallId, delivered + fresh.length);
    pieces.push({ spanId, toolCallId: part.toolCallId, text: fresh });
  }
}

/**
 * Marks what a resuming subscriber already had of a call as delivered. A call's characters are
 * counted in the order a snapshot lists them — its text, then each tool call's arguments in the
 * order they began — which is the order models stream them in.
 */
function skipHad(call: Call, parts: readonly RunOutputPart[]): void {
  let had = call.had;
  call.had = 0;
  for (const part of parts) {
    if (had <= 0) return;
    const taken = Math.min(had, part.offset + part.text.length);
    call.delivered.set(part.toolCallId, Math.max(call.delivered.get(part.toolCallId) ?? 0, taken));
    had -= taken;
  }
}
