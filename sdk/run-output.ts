// client.runOutput(): the text a run's model produces, as plain strings, for chat interfaces.
// It resumes after a dropped connection without repeating text: the server sends a model call
// that was running when a subscription (re)started from its start in one TEXT_DELTA, and this
// keeps, per call, what was already given, so only what is new comes out.
import type { RunOutputSubscription } from "./generated/graphql.js";

export type RunOutputUpdate = RunOutputSubscription["runOutput"];

export type RunOutputSource = {
  /** Opens the subscription after `afterSeq` (from the start without it). */
  open(afterSeq: number | undefined): AsyncIterableIterator<RunOutputSubscription>;
  /** Counts the socket's connections: the socket client restarts its subscriptions on each new one. */
  connection(): number;
  /** The run's answer, read once it settled (null without one). */
  answer(): Promise<string | null>;
  /** Errors after which subscribing again cannot help. */
  isFinal(error: unknown): boolean;
};

/** The model's text, piece by piece, until the run settles. */
export async function* runOutputText(source: RunOutputSource, afterSeq: number | undefined): AsyncGenerator<string> {
  const text = new TextSoFar();
  let last = afterSeq;
  // Something may have been missed: a call that ended while disconnected is the log's to give.
  let interrupted = false;
  for (let attempt = 0; ; attempt += 1) {
    const stream = source.open(last);
    text.restart();
    let connection: number | undefined;
    let resync = false;
    try {
      for await (const { runOutput: update } of stream) {
        attempt = 0;
        if (connection !== undefined && source.connection() !== connection) {
          text.restart();
          interrupted = true;
        }
        connection = source.connection();
        last = update.seq;
        if (update.kind === "TEXT_DELTA") {
          const fresh = text.add(update.modelCallSpanId!, update.text ?? "");
          if (fresh) yield fresh;
        } else if (update.kind === "MESSAGE_DONE") text.lastCall = update.modelCallSpanId;
        else if (update.kind === "RESYNC_REQUIRED") {
          resync = interrupted = true;
          break;
        } else if (update.kind === "RUN_DONE") {
          const rest = interrupted ? text.restOf(await source.answer()) : "";
          if (rest) yield rest;
          return;
        }
      }
      if (!resync) return;
    } catch (error) {
      if (source.isFinal(error) || attempt >= 5) throw error;
      interrupted = true;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    } finally {
      await stream.return?.();
    }
  }
}

/** What was given of each model call's text, and what the current subscription has sent of it. */
class TextSoFar {
  private readonly given = new Map<string, string>();
  private received = new Map<string, number>();
  /** The call whose MESSAGE_DONE came last: at the run's end, the one that answered. */
  lastCall: string | null = null;

  /** A new subscription sends each running call again from its start. */
  restart(): void {
    this.received = new Map();
  }

  /** The part of a delta not given yet. */
  add(call: string, delta: string): string {
    const start = this.received.get(call) ?? 0;
    this.received.set(call, start + delta.length);
    const given = this.given.get(call) ?? "";
    if (start > given.length || start + delta.length <= given.length) return "";
    const fresh = delta.slice(given.length - start);
    this.given.set(call, given + fresh);
    return fresh;
  }

  /** What of the answer the last call's deltas did not bring (it ended while we were away). */
  restOf(answer: string | null): string {
    const given = (this.lastCall && this.given.get(this.lastCall)) || "";
    return answer?.startsWith(given) ? answer.slice(given.length) : "";
  }
}
