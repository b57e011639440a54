// Live model output on the event bus (runOutput): each model call's coalesced deltas go out on
// `run:output`, to subscribers on this instance and, with Redis, on every other. A subscriber who
// joins mid-call asks on `run:output:wanted`; the instance executing the call answers with what
// the call produced so far. Only this instance holds that text: it is never stored.
import { type EventBus, SubscriberOverflowError } from "../../events/topics.js";
import type { ModelCallOutput, RunOutput } from "../ports/run-output.js";
import { StreamingCall } from "../output/streaming-call.js";

export type BusRunOutputOptions = {
  coalesceMs?: number;
  /**
   * How long an ended call's output is still given to a subscriber who asks: one who joined just
   * as the call ended still gets its text whole.
   */
  keepEndedMs?: number;
};

export class BusRunOutput implements RunOutput {
  /** The calls of each run this instance is executing (or ended a moment ago). */
  private readonly calls = new Map<string, Set<StreamingCall>>();
  private requests: AsyncIterator<{ runId: string }> | undefined;

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
        call.end();
        setTimeout(() => this.forget(call), this.options.keepEndedMs ?? 10_000).unref();
      },
    };
  }

  /** Starts answering subscribers who join mid-call (a worker companion: it starts and stops with the worker). */
  start(): void {
    if (this.requests) return;
    let requests = this.events.subscribe("run:output:wanted")[Symbol.asyncIterator]();
    this.requests = requests;
    void (async () => {
      for (;;) {
        try {
          for (let next = await requests.next(); !next.done; next = await requests.next()) {
            for (const call of this.calls.get(next.value.runId) ?? []) this.events.publish("run:output", call.runId, call.snapshot());
          }
          return;
        } catch (error) {
          // More asks in one burst than the bus keeps for one subscriber (SubscriberOverflowError):
          // those asking again are answered (a subscriber asks a few times), so it listens again.
          if (!(error instanceof SubscriberOverflowError) || this.requests !== requests) return;
          requests = this.events.subscribe("run:output:wanted")[Symbol.asyncIterator]();
          this.requests = requests;
        }
      }
    })();
  }

  async stop(): Promise<void> {
    const requests = this.requests;
    this.requests = undefined;
    await requests?.return?.();
  }

  private forget(call: StreamingCall): void {
    const ofRun = this.calls.get(call.runId);
    ofRun?.delete(call);
    if (ofRun?.size === 0) this.calls.delete(call.runId);
  }
}
