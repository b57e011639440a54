// runOutput: a run's model output as it is produced, for chat interfaces. Two sources, merged:
// the run's trace (traceUpdates: replayed from the database after `afterSeq`, then live, with its
// bounded buffer) says when a model call finished and when the run settled; the live frames of the
// instance executing the run (`run:output`, never stored) carry the text and tool-call arguments.
// A subscriber who joins or resumes mid-call asks for the call's snapshot and gets the text so far
// in one piece (several past the response's byte budget), then the live deltas: the deltas of a call always add up to its text exactly.
import type { EventBus, RunOutputFrame, SnapshotAsker } from "../../events/topics.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { listenTrace, type TraceUpdate, traceUpdates } from "../updates/trace-updates.js";
import { LiveCalls } from "./live-calls.js";
import { OutputInbox } from "./output-inbox.js";
import { changesWithKinds, type OutputStart, readOutputStart } from "./output-start.js";
import { streamStartRows } from "../../db/direct-statements.js";
import { withinBytes } from "./within-bytes.js";

export type RunOutputKind = "TEXT_DELTA" | "TOOL_CALL_DELTA" | "MESSAGE_DONE" | "RUN_DONE" | "RESYNC_REQUIRED";

/**
 * Where a subscriber is: after trace change `seq`, holding `chars` characters of the model call
 * running there (0 between calls). Written "seq" or "seq:chars".
 */
export type OutputPosition = { seq: number; chars: number };

export type RunOutputUpdate = {
  /**
   * The position right after this update: a delta's is the trace position it follows and the
   * characters of its call delivered with it, so every update's is greater than the one before.
   */
  seq: string;
  modelCallSpanId: string | null;
  kind: RunOutputKind;
  text: string | null;
  toolCallId: string | null;
};

export type RunOutputOptions = {
  prisma: PrismaClient;
  events: EventBus;
  runId: string;
  afterSeq: OutputPosition;
  /** How many updates may wait for a slow subscriber before it must resync. */
  bufferLimit: number;
  /**
   * How long a finished call's MESSAGE_DONE waits for the call's last output still on its way
   * (a snapshot asked for, a last frame): past it, the call's text is the log's to give.
   */
  settleMs?: number;
  /** Ends the stream at once, also while the run is idle (the subscriber left). */
  signal?: AbortSignal;
  /**
   * The most UTF-8 bytes of one update's text (the response's budget, MAX_RESPONSE_BYTES): a
   * larger piece, such as a large call's snapshot, is given as several (within-bytes.ts). Unset: no bound.
   */
  maxTextBytes?: number;
  /** Listening already on, and what it read to start (openRunOutput); else the stream listens and reads when it starts. */
  opened?: OpenedOutput;
  /** Who subscribed: its asks for snapshots are counted against it (bus-run-output.ts). Unset: against the run's principal. */
  asker?: SnapshotAsker;
};

/** A run's output listened to, and the start read after the listening began. */
export type OpenedOutput = {
  /** Null when the run is not there (or not the principal's). */
  start: Promise<OutputStart | null>;
  inbox: OutputInbox;
  live: ReturnType<typeof listenTrace>;
  /** Aborted when the stream ends or is never read (close). */
  stop: AbortController;
  /** Stops listening; for a stream that will never be read. */
  close: () => void;
  /** The start, once read (set before anyone awaiting `start` resumes). */
  read?: { start: OutputStart | null };
};

/**
 * Listens to a run's output and its trace, then reads where the stream starts in one statement
 * (output-start.ts): listening first, so that nothing published meanwhile is missed. Its start
 * is null when the run is not there, or not `ownerId`'s; one that is not read must be closed.
 */
export function openRunOutput(
  options: Pick<RunOutputOptions, "prisma" | "events" | "runId" | "afterSeq" | "bufferLimit"> & { ownerId?: string },
): OpenedOutput {
  const { prisma, events, runId, bufferLimit } = options;
  const stop = new AbortController();
  const inbox = new OutputInbox(bufferLimit);
  const frames = events.subscribe("run:output", runId)[Symbol.asyncIterator]();
  inbox.readFrames(frames);
  const live = listenTrace({ events, traceId: runId, bufferLimit, signal: stop.signal });
  const close = () => {
    stop.abort();
    inbox.close();
    live.close();
    void frames.return?.();
  };
  const opened: OpenedOutput = { start: readOutputStart(prisma, runId, options.afterSeq, options.ownerId), inbox, live, stop, close };
  opened.start.then(
    (start) => (opened.read = { start }),
    () => undefined,
  );
  return opened;
}

/**
 * While a snapshot is missing it is asked for again, first ASK_AFTER_MS after the ask before, each
 * wait twice the one before up to ASK_AT_MOST_MS, until it comes or the call ends (its MESSAGE_DONE):
 * the executing instance may have been subscribing, it answers a run's asks once a window, in
 * turn with its principal's other runs (bus-run-output.ts), and a snapshot can be dropped on its way (a full publish
 * backlog, or the snapshots' share of it: redis-event-target.ts) with nothing telling the asker.
 */
const ASK_AFTER_MS = 250;
const ASK_AT_MOST_MS = 4_000;

/** How long after the `asks`-th ask the next one goes while the snapshot is still missing. */
const askAgainAfter = (asks: number): number => (asks <= 0 ? 0 : Math.min(ASK_AT_MOST_MS, ASK_AFTER_MS * 2 ** Math.min(asks - 1, 16)));

export async function* runOutputUpdates(options: RunOutputOptions): AsyncGenerator<RunOutputUpdate> {
  const { prisma, events, runId } = options;
  const opened = options.opened ?? openRunOutput(options);
  const { inbox, stop, live } = opened;
  const leave = opened.close;
  options.signal?.addEventListener("abort", leave, { once: true });
  const { afterSeq, bufferLimit } = options;
  // A run that is not there has no output: its trace's stream ends at once (RUN_DONE).
  const absent: OutputStart = { trace: { expired: null, settledWithoutTrace: true, changes: [] }, running: [], modelCallEndedAfter: false };
  const started = opened.start.then((start) => start ?? absent);
  const trace = started.then((start) => start.trace);
  inbox.readChanges(
    traceUpdates({ prisma, events, traceId: runId, afterSeq: afterSeq.seq, bufferLimit, signal: stop.signal, live, start: trace, replay: changesWithKinds }),
  );
  const calls = new LiveCalls();
  const starts = new Map<string, number>();
  /**
   * Model calls whose end the start read, at that trace position: a call that follows one of them
   * gives its output once that end was given, as one that follows a call whose end went out.
   */
  const endsRead = new Map<string, number>();
  const asking = { count: 0, at: 0 };
  const ask = () => {
    asking.count += 1;
    asking.at = performance.now();
    events.publish("run:output:wanted", options.asker ? { runId, asker: options.asker } : { runId });
  };
  try {
    // Calls already running started before we listened: only their snapshots can start them. A
    // position inside a call (`chars` > 0) is one of the call running after the last model call
    // that ended at or before it: the subscriber has `chars` of a running call unless a model call
    // ended after that position (a run runs one model call at a time, and a delta's position is
    // never before the end of the call before its own; see outputAfter). A subscriber between
    // calls does not wait for the start to be read (a busy database holds it back for seconds
    // when a hundred subscribers start at once): a frame from a call's start brings all of it,
    // and a piece after a gap waits for the snapshot (LiveCalls). One inside a call waits, for the
    // characters it had.
    const apply = (start: OutputStart) => {
      for (const change of start.trace.changes)
        if (change.type === "SPAN_ENDED" && "spanKind" in change && change.spanKind === "MODEL_CALL") endsRead.set(change.spanId!, change.seq);
      const had = afterSeq.chars > 0 && !start.modelCallEndedAfter ? afterSeq.chars : 0;
      for (const id of start.running) calls.expectSnapshot(id, had);
      if (!inbox.closed && calls.awaitingSnapshot() && asking.count === 0) ask();
      inbox.poke();
    };
    // Read already (the subscription's own start, awaited for its owner check): applied before any frame.
    if (opened.read) apply(opened.read.start ?? absent);
    else {
      const running = started.then(apply, (error: unknown) => inbox.fail(error));
      if (afterSeq.chars > 0) await running;
    }
    let last = options.afterSeq.seq;
    let ending: { seq: number; spanId: string; until: number } | undefined;
    const endCall = () => {
      const { seq, spanId } = ending!;
      ending = undefined;
      calls.finish(spanId);
      last = seq;
      return update(String(seq), "MESSAGE_DONE", spanId);
    };
    for (;;) {
      if (inbox.closed) return;
      if (inbox.failure) throw inbox.failure.error;
      if (inbox.overflow) return yield update(at(last, calls), "RESYNC_REQUIRED");
      const frame = inbox.peekFrame();
      // A later call's output cannot come before the end of the one ending (positions only grow).
      if (frame && ending && frame.spanId !== ending.spanId) {
        yield endCall();
        continue;
      }
      if (frame && !starts.has(frame.spanId))
        starts.set(
          frame.spanId,
          followsGivenCalls(frame, calls) ? -1 : (endsRead.get(frame.follows ?? "") ?? (await outputAfter(prisma, runId, frame.spanId, last))),
        );
      // Output is given at once when no earlier model call's end is still to come, else once the
      // trace was read up to its call's start (a replayed end of an earlier call comes first):
      // either way, resuming after a delta finds its call as the one running after the last
      // model call that ended (the running calls read at the start).
      if (frame && starts.get(frame.spanId)! <= last) {
        inbox.nextFrame();
        yield* deltasOf(calls, frame, last, options.maxTextBytes);
        // A gap asks for a snapshot; once none is missing, a later gap may ask again.
        if (!calls.awaitingSnapshot()) asking.count = 0;
        else if (asking.count === 0) ask();
        continue;
      }
      if (ending) {
        if (calls.complete(ending.spanId) || performance.now() >= ending.until) yield endCall();
        else await waitForMore(inbox, calls, asking, ask, ending.until);
        continue;
      }
      const change = inbox.nextChange();
      if (change === undefined) {
        await waitForMore(inbox, calls, asking, ask);
        continue;
      }
      // A run settled without a trace (cancelled while queued) ends the trace's stream without TRACE_ENDED.
      if (change === "end") return yield update(at(last, calls), "RUN_DONE");
      if (change.type === "RESYNC_REQUIRED") return yield update(at(last, calls), "RESYNC_REQUIRED");
      if (change.type === "TRACE_ENDED") return yield update(String(change.seq), "RUN_DONE");
      // An expired trace has no output to give: the run is long done.
      if (change.type === "TRACE_EXPIRED") return yield update(String(change.seq), "RUN_DONE");
      if (change.type === "SPAN_ENDED" && change.spanId && (await isModelCall(prisma, change))) {
        ending = { seq: change.seq, spanId: change.spanId, until: performance.now() + (options.settleMs ?? 1_000) };
        continue;
      }
      last = change.seq;
    }
  } finally {
    options.signal?.removeEventListener("abort", leave);
    leave();
  }
}

/**
 * The pieces a frame adds, each with its own position: the trace position and the characters of
 * its call delivered up to and including it (a position the subscriber can resume after). A piece
 * of more than `maxBytes` is given as several within it.
 */
function* deltasOf(calls: LiveCalls, frame: RunOutputFrame, seq: number, maxBytes = Number.POSITIVE_INFINITY): Generator<RunOutputUpdate> {
  const pieces = calls.place(frame);
  let chars = calls.deliveredOf(frame.spanId) - pieces.reduce((sum, piece) => sum + piece.text.length, 0);
  for (const piece of pieces) {
    const kind = piece.toolCallId === null ? "TEXT_DELTA" : "TOOL_CALL_DELTA";
    for (const text of withinBytes(piece.text, maxBytes)) {
      chars += text.length;
      yield { seq: `${seq}:${chars}`, modelCallSpanId: piece.spanId, kind, text, toolCallId: piece.toolCallId };
    }
  }
}

/** The subscriber's position between frames: the trace position, and what it has of a call running there. */
function at(seq: number, calls: LiveCalls): string {
  const chars = calls.runningDelivered();
  return chars > 0 ? `${seq}:${chars}` : String(seq);
}

/**
 * Whether the frame's call comes right after calls whose ends were all given (or after none: the
 * run's first call), as the executing instance tells: its output may then be given at once,
 * without asking the database (outputAfter) — 100 subscribers asking at once, as a busy worker
 * starts its runs, hold every first piece back while the queries wait for connections.
 */
function followsGivenCalls(frame: RunOutputFrame, calls: LiveCalls): boolean {
  return frame.follows === null || (frame.follows !== undefined && calls.finished(frame.follows));
}

/**
 * The trace position after which a model call's output may be given. Any (-1) when every other
 * model call of the run has ended, at or before `last`: no MESSAGE_DONE must come first, so its
 * first pieces go out as they come, whether or not its start was written (the executing instance
 * writes it behind the model request) or read from the trace yet. Otherwise the position at
 * which the call started (recorded before it produced anything; 0 while not written).
 */
const OUTPUT_AFTER_SQL = `
    SELECT EXISTS (
      SELECT 1 FROM span s
      WHERE s.trace_id = $1 AND s.kind = 'MODEL_CALL' AND s.id <> $2
        AND (s.status = 'RUNNING' OR EXISTS (
          SELECT 1 FROM trace_change c WHERE c.trace_id = $1 AND c.span_id = s.id AND c.type = 'SPAN_ENDED' AND c.seq > $3::bigint
        ))
    ) AS pending,
    (SELECT c.seq FROM trace_change c WHERE c.trace_id = $1 AND c.span_id = $2 AND c.type = 'SPAN_STARTED' LIMIT 1) AS started`;

async function outputAfter(prisma: PrismaClient, runId: string, spanId: string, last: number): Promise<number> {
  const [row] = await streamStartRows<{ pending: boolean; started: number | string | null }>(prisma, OUTPUT_AFTER_SQL, runId, spanId, last);
  if (!row?.pending) return -1;
  return row.started === null ? 0 : Number(row.started);
}

const update = (seq: string, kind: RunOutputKind, modelCallSpanId: string | null = null): RunOutputUpdate => ({
  seq,
  modelCallSpanId,
  kind,
  text: null,
  toolCallId: null,
});

/** Waits for the next frame or change, or `until`; asks for a snapshot again meanwhile while one is missing (askAgainAfter). */
async function waitForMore(
  inbox: OutputInbox,
  calls: LiveCalls,
  asking: { count: number; at: number },
  ask: () => void,
  until = Number.POSITIVE_INFINITY,
): Promise<void> {
  const missing = calls.awaitingSnapshot();
  if (missing && performance.now() - asking.at >= askAgainAfter(asking.count)) ask();
  const wakeAt = Math.min(until, missing ? asking.at + askAgainAfter(asking.count) : Number.POSITIVE_INFINITY);
  await inbox.wait(Number.isFinite(wakeAt) ? Math.max(0, wakeAt - performance.now()) : undefined);
}

/** Whether a span change is a model call's (its state or kind came with it; else the span is read). */
async function isModelCall(prisma: PrismaClient, change: TraceUpdate): Promise<boolean> {
  if (change.span) return change.span.kind === "MODEL_CALL";
  if ("spanKind" in change && change.spanKind) return change.spanKind === "MODEL_CALL";
  const span = await prisma.span.findUnique({ where: { id: change.spanId! }, select: { kind: true } });
  return span?.kind === "MODEL_CALL";
}
