// client.watchRun() and client.runOutput(): a run's model output for chat interfaces. Every update
// carries its own position (`seq`), greater than the one before; an app that stores the seq of
// the last update it rendered and calls watchRun(runId, { afterSeq }) after a page reload gets
// exactly the rest — what it missed of a running call arrives merged into one TEXT_DELTA (several,
// past the server's response byte budget). Within one watch, a dropped socket is resumed the same
// way, and whatever a restarted subscription sends again is cut here, so nothing is ever given twice.
import type { RunOutputSubscription } from "./generated/graphql.js";
import { backoffMs } from "./transport.js";

export type RunOutputUpdate = RunOutputSubscription["runOutput"];

export type RunOutputSource = {
  /** Opens the subscription after `afterSeq` (from the start without it). */
  open(afterSeq: string | undefined): AsyncIterableIterator<RunOutputSubscription>;
  /** The run's answer, read once it settled (null without one). */
  answer(): Promise<string | null>;
  /** Errors after which subscribing again cannot help. */
  isFinal(error: unknown): boolean;
};

/** A position: the trace's seq, and the characters of the call running there ("12" or "12:340"). */
export function parsePosition(seq: string): [trace: number, chars: number] {
  const [trace, chars] = seq.split(":");
  return [Number(trace), Number(chars ?? 0)];
}

/** Orders two positions: negative when `a` comes first. */
export function comparePositions(a: string, b: string): number {
  const [ta, ca] = parsePosition(a);
  const [tb, cb] = parsePosition(b);
  return ta !== tb ? ta - tb : ca - cb;
}

/** After resyncs in a row, the wait before opening again doubles up to 250 ms × 2^4 (4 s). */
const MAX_RESYNC_DOUBLINGS = 4;

/** Every update of a run's output after `afterSeq`, each once, until the run settles. */
export async function* watchRunUpdates(source: RunOutputSource, afterSeq: string | undefined): AsyncGenerator<RunOutputUpdate> {
  const state = new WatchState(afterSeq);
  // Streams in a row that ended with RESYNC_REQUIRED: a consumer always slower than the stream
  // would otherwise open, be given what it missed and fall behind again without a pause.
  let resyncs = 0;
  for (let attempt = 0; ; attempt += 1) {
    if (resyncs > 0) await new Promise((resolve) => setTimeout(resolve, backoffMs(undefined, Math.min(resyncs - 1, MAX_RESYNC_DOUBLINGS))));
    const stream = source.open(state.last);
    let resync = false;
    try {
      for await (const { runOutput: update } of stream) {
        attempt = 0;
        if (update.kind === "RESYNC_REQUIRED") {
          resync = state.interrupted = true;
          break;
        }
        if (update.kind === "RUN_DONE") {
          const rest = await state.restOfAnswer(source, update);
          if (rest) yield rest;
          yield update;
          return;
        }
        const fresh = state.accept(update);
        if (fresh) yield fresh;
      }
      if (!resync) return;
      resyncs += 1;
    } catch (error) {
      if (source.isFinal(error) || attempt >= 5) throw error;
      state.interrupted = true;
      resyncs = 0;
      await new Promise((resolve) => setTimeout(resolve, backoffMs(error, attempt)));
    } finally {
      await stream.return?.();
    }
  }
}

/** The model's text, piece by piece, until the run settles. */
export async function* runOutputText(source: RunOutputSource, afterSeq: string | undefined): AsyncGenerator<string> {
  for await (const update of watchRunUpdates(source, afterSeq)) if (update.kind === "TEXT_DELTA" && update.text) yield update.text;
}

/** What one watch has given: the last position, and the characters of each call. */
class WatchState {
  last: string | undefined;
  /** A call may have ended while nothing was listening: its text's rest is the log's to give. */
  interrupted: boolean;
  private readonly had = new Map<string, number>();
  private readonly texts = new Map<string, string>();
  private lastCall: string | null = null;

  constructor(afterSeq: string | undefined) {
    this.last = afterSeq;
    // Resuming inside a call: the app has its start, which this watch never saw.
    this.interrupted = afterSeq !== undefined && parsePosition(afterSeq)[1] > 0;
  }

  /** The part of an update not given yet (null when all of it was); records it as given. */
  accept(update: RunOutputUpdate): RunOutputUpdate | null {
    if (this.last !== undefined && comparePositions(update.seq, this.last) <= 0) {
      // Only a subscription that started again sends what came before (graphql-ws resubscribes
      // with the variables it was opened with): a call may have ended while it was away.
      this.interrupted = true;
      return null;
    }
    this.last = update.seq;
    if (update.kind === "MESSAGE_DONE") this.lastCall = update.modelCallSpanId;
    if (update.kind !== "TEXT_DELTA" && update.kind !== "TOOL_CALL_DELTA") return update;
    const call = update.modelCallSpanId!;
    const text = update.text ?? "";
    const end = parsePosition(update.seq)[1];
    const start = end - text.length;
    const had = this.had.get(call) ?? start;
    this.had.set(call, Math.max(had, end));
    const fresh = { ...update, text: text.slice(Math.max(0, had - start)) };
    if (fresh.kind === "TEXT_DELTA") this.texts.set(call, (this.texts.get(call) ?? "") + fresh.text);
    return fresh.text ? fresh : null;
  }

  /** After an interruption, what of the answer the last call's deltas did not bring, as a TEXT_DELTA before `done`. */
  async restOfAnswer(source: RunOutputSource, done: RunOutputUpdate): Promise<RunOutputUpdate | null> {
    if (!this.interrupted || this.lastCall === null) return null;
    const answer = await source.answer();
    const given = this.texts.get(this.lastCall) ?? "";
    const had = this.had.get(this.lastCall) ?? (this.last ? parsePosition(this.last)[1] : 0);
    if (!answer || answer.slice(had - given.length, had) !== given || answer.length <= had) return null;
    const trace = this.last ? parsePosition(this.last)[0] : 0;
    return { ...done, seq: `${trace}:${answer.length}`, kind: "TEXT_DELTA", modelCallSpanId: this.lastCall, toolCallId: null, text: answer.slice(had) };
  }
}
