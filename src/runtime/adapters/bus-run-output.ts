// Live model output on the event bus (runOutput): each model call's coalesced deltas go out on
// `run:output`, to subscribers on this instance and, with Redis, on every other. A subscriber who
// joins mid-call asks on `run:output:wanted`; the instance executing the call answers with what
// the call produced so far. Only this instance holds that text: it is never stored. A run's calls
// are given whole at most once a window, however many ask: the first ask at once, the asks that
// follow within the window together at its end. The window is `snapshotEveryMs`, longer for a
// large call (`snapshotCharsPerSecond`). One principal starting and leaving subscriptions in a loop
// on its run, whose call streams large tool arguments, costs the bus one snapshot a window, not
// one per ask: answered one by one, they took this instance's loop and the publish backlog that
// every principal's live output shares (redis-event-target.ts), and the other runs' pieces were dropped.
import type { EventBus } from "../../events/topics.js";
import type { ModelCallOutput, RunOutput } from "../ports/run-output.js";
import { StreamingCall } from "../output/streaming-call.js";
import { keepListening, type Listening } from "../../events/keep-listening.js";
import { type Logger, silentLogger } from "../../logger.js";

/** The least time between two answers to the asks for one run's snapshots (BusRunOutputOptions.snapshotEveryMs). */
export const SNAPSHOT_EVERY_MS = 100;
/** The characters a second one run's answers may cost at most: the window after a larger answer is longer. */
export const SNAPSHOT_CHARS_PER_SECOND = 1024 * 1024;

export type BusRunOutputOptions = {
  coalesceMs?: number;
  /**
   * How long an ended call's output is still given to a subscriber who asks: one who joined just
   * as the call ended still gets its text whole.
   */
  keepEndedMs?: number;
  /**
   * The least time between two answers to asks for one run's snapshots: an ask that comes sooner
   * after an answer is answered once the time is up, together with every other ask meanwhile.
   */
  snapshotEveryMs?: number;
  /** After an answer of N characters, the next waits at least N / this many seconds. */
  snapshotCharsPerSecond?: number;
  /** Where a failure of listening for snapshot asks is logged (it listens again). */
  logger?: Logger;
};

export class BusRunOutput implements RunOutput {
  /** The calls of each run this instance is executing (or ended a moment ago). */
  private readonly calls = new Map<string, Set<StreamingCall>>();
  /** When each run's calls may next be given whole, and the answer due then for asks that came since. */
  private readonly answered = new Map<string, { next: number; due?: ReturnType<typeof setTimeout> }>();
  private requests: Listening | undefined;

  constructor(
    private readonly events: EventBus,
    private readonly options: BusRunOutputOptions = {},
  ) {}

  modelCall({ runId, spanId, follows }: { runId: string; spanId: string; follows?: string | null }): ModelCallOutput {
    const call = new StreamingCall({
      runId,
      spanId,
      follows,
      coalesceMs: this.options.coalesceMs,
      send: (frame) => this.events.publish("run:output", runId, frame),
    });
    const ofRun = this.calls.get(runId) ?? new Set();
    this.calls.set(runId, ofRun.add(call));
    return {
      report: (event) => call.report(event),
      end: () => {
        // Asks waiting for the window's end came before this end: answered now, ahead of the call's last frame.
        this.answerDue(runId);
        call.end();
        setTimeout(() => this.forget(call), this.options.keepEndedMs ?? 10_000).unref();
      },
    };
  }

  /** Starts answering subscribers who join mid-call (a worker companion: it starts and stops with the worker). */
  start(): void {
    if (this.requests) return;
    this.requests = keepListening({
      what: "asks for live output snapshots",
      subscribe: () => this.events.subscribe("run:output:wanted"),
      onEvent: ({ runId }) => this.answer(runId),
      // A subscriber who asked meanwhile was not answered: every call in flight is given whole.
      onResumed: () => {
        for (const runId of this.calls.keys()) this.answer(runId);
      },
      logger: this.options.logger ?? silentLogger,
    });
  }

  async stop(): Promise<void> {
    const requests = this.requests;
    this.requests = undefined;
    for (const { due } of this.answered.values()) clearTimeout(due);
    this.answered.clear();
    await requests?.stop();
  }

  /**
   * Answers an ask for a run's snapshots: at once when the run's window is over, else once it is —
   * an answer that comes after the ask, so the asker (who listened before asking) hears it, and
   * one for all the asks of the window. An ask for a run not executed here is another instance's.
   */
  private answer(runId: string): void {
    if (!this.calls.has(runId)) return;
    const slot = this.answered.get(runId);
    const now = performance.now();
    // An answer already due (its timer late on a busy loop, maybe) is one after this ask too.
    if (slot?.due) return;
    if (!slot || now >= slot.next) this.answered.set(runId, { next: now + this.windowAfter(this.giveWhole(runId)) });
    else {
      slot.due = setTimeout(() => {
        slot.due = undefined;
        slot.next = performance.now() + this.windowAfter(this.giveWhole(runId));
      }, slot.next - now);
      slot.due.unref();
    }
  }

  /** Gives the answer due at the end of the run's window now, if one is. */
  private answerDue(runId: string): void {
    const slot = this.answered.get(runId);
    if (!slot?.due) return;
    clearTimeout(slot.due);
    slot.due = undefined;
    slot.next = performance.now() + this.windowAfter(this.giveWhole(runId));
  }

  /** Publishes the run's calls whole; the characters published. */
  private giveWhole(runId: string): number {
    let chars = 0;
    for (const call of this.calls.get(runId) ?? []) {
      const snapshot = call.snapshot();
      for (const part of snapshot.parts) chars += part.text.length;
      this.events.publish("run:output", call.runId, snapshot);
    }
    return chars;
  }

  private windowAfter(chars: number): number {
    const perSecond = this.options.snapshotCharsPerSecond ?? SNAPSHOT_CHARS_PER_SECOND;
    return Math.max(this.options.snapshotEveryMs ?? SNAPSHOT_EVERY_MS, (chars / perSecond) * 1000);
  }

  private forget(call: StreamingCall): void {
    const ofRun = this.calls.get(call.runId);
    ofRun?.delete(call);
    if (ofRun?.size !== 0) return;
    this.calls.delete(call.runId);
    clearTimeout(this.answered.get(call.runId)?.due);
    this.answered.delete(call.runId);
  }
}
