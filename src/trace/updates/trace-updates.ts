// A trace's changes as a resumable stream (T3): listen first, replay `seq > afterSeq` from the
// database (the source of truth), then continue live, skipping what was already delivered and
// fetching any gap from the database — no gap, no duplicate, across reconnects and restarts.
// The live buffer is bounded: a subscriber that falls too far behind is told to resync and the
// stream ends, so it never holds up the runtime or other subscribers.
import { type EventBus, EventLinkLostError, type SpanState, type TraceChangeMessage } from "../../events/topics.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { TERMINAL_STATUSES } from "../../domain/runs/stop-reasons.js";
import { spanAsOf } from "../../domain/trace/trace-writes.js";
import { type JsonValue, spanAfterOf } from "../../domain/json-columns.js";

export type TraceUpdate =
  /** `spanKind`: a replayed change's span's kind, where it was read instead of the span's state (runOutput). */
  | (Omit<TraceChangeMessage, "at"> & { at: Date; spanKind?: string | null })
  | { traceId: string; seq: number; type: "RESYNC_REQUIRED"; spanId: null; eventId: null; span: null; at: Date }
  /** The trace expired under its retention policy (at: when): nothing of it can be replayed. */
  | { traceId: string; seq: number; type: "TRACE_EXPIRED"; spanId: null; eventId: null; span: null; at: Date; mode: "DELETE" | "KEEP_SUMMARY" };

/** Where the trace's stream starts (traceUpdates' `start`). */
export type TraceStart = {
  /** The trace expired: its TRACE_EXPIRED update, and nothing to replay. */
  expired: TraceUpdate | null;
  /** The run settled without ever starting (cancelled while queued): no trace to wait for. */
  settledWithoutTrace: boolean;
  /** The first page of the changes after the position, each with its span's kind. */
  changes: TraceUpdate[];
};

/** Changes read per statement; a full page means more may follow. */
export const REPLAY_PAGE = 500;
/**
 * A live stream that heard nothing for this long reads the database for changes after the last
 * it delivered: the bus only wakes subscribers, and a notification lost while its connection was
 * reset (Redis failing over, a link that dropped) — the trace's last one included — is found here.
 */
const IDLE_CHECK_MS = 5_000;

export type TraceUpdatesOptions = {
  prisma: PrismaClient;
  events: EventBus;
  /** The trace's id, which is its run's id. */
  traceId: string;
  afterSeq: number;
  /** How many live changes may wait for a slow subscriber before it must resync. */
  bufferLimit: number;
  /** Ends the stream, also while it waits for a live change (a consumer that reads it from a loop of its own). */
  signal?: AbortSignal;
  /** How long a quiet stream waits before it reads the database for what it may have missed (default 5 s). */
  idleCheckMs?: number;
  /** The live changes, listened to already (listenTrace): the stream's own listening starts with the stream. */
  live?: LiveBuffer;
  /** The trace's expiry, whether its run settled without it, and the first page of the replay, read already (with the listening already on). */
  start?: TraceStart | Promise<TraceStart>;
  /** Reads the changes to replay (default: each span change with the span as it was after it). */
  replay?: (prisma: PrismaClient, traceId: string, afterSeq: number, beforeSeq?: number) => AsyncIterable<TraceUpdate>;
};

export async function* traceUpdates(options: TraceUpdatesOptions): AsyncGenerator<TraceUpdate> {
  const { prisma, traceId } = options;
  const live = options.live ?? listenTrace(options);
  const replay = options.replay ?? replaySpans;
  try {
    let last = options.afterSeq;
    // While the start is still being read (a busy database), live changes that follow the position
    // without a gap go out at once: nothing before them can be missing. A model call's end read
    // late would hold back the next call's output (runOutput gives it after that end).
    if (options.start instanceof Promise) {
      for (;;) {
        const change = await live.following(last, options.start);
        if (change === "closed") return;
        if (change === "wait") break;
        yield { ...change, at: new Date(change.at) };
        last = change.seq;
        if (change.type === "TRACE_ENDED") return;
      }
    }
    const start = await options.start;
    // An expired trace has nothing to replay or to wait for: the stream ends at once, saying why.
    const expired = start ? start.expired : await expiryOf(prisma, traceId);
    if (expired) return yield expired;
    for (const change of start?.changes ?? []) {
      if (change.seq <= last) continue;
      yield change;
      last = change.seq;
      if (change.type === "TRACE_ENDED") return;
    }
    // A start read in one statement holds the whole replay log after the position, unless its page was full.
    if (!start || start.changes.length >= REPLAY_PAGE) {
      for await (const change of replay(prisma, traceId, last)) {
        yield change;
        last = change.seq;
        if (change.type === "TRACE_ENDED") return;
      }
      if (await settledWithoutTrace(prisma, traceId)) return;
      // It expired while it was replayed (its replay log went with it).
      const expiredSince = await expiryOf(prisma, traceId);
      if (expiredSince) return yield expiredSince;
    } else if (start.settledWithoutTrace) return;
    for (;;) {
      const change = await live.next(options.idleCheckMs ?? IDLE_CHECK_MS);
      if (change === "closed") return;
      if (change === "idle") {
        for await (const missed of replay(prisma, traceId, last)) {
          yield missed;
          last = missed.seq;
          if (missed.type === "TRACE_ENDED") return;
        }
        continue;
      }
      if (change === "overflow") {
        yield { traceId, seq: last, type: "RESYNC_REQUIRED", spanId: null, eventId: null, span: null, at: new Date() };
        return;
      }
      if (change.seq <= last) continue;
      // Sequence numbers are contiguous per trace, so only a jump means a change was published
      // before we listened, or lost: the database has it. (Checking on every change would cost
      // one query per subscriber per update.)
      if (change.seq > last + 1) {
        for await (const missed of replay(prisma, traceId, last, change.seq)) {
          yield missed;
          last = missed.seq;
        }
      }
      yield { ...change, at: new Date(change.at) };
      last = change.seq;
      if (change.type === "TRACE_ENDED") return;
    }
  } finally {
    live.close();
  }
}

async function* replaySpans(prisma: PrismaClient, traceId: string, afterSeq: number, beforeSeq?: number): AsyncGenerator<TraceUpdate> {
  const pages = pagesAfter(afterSeq, (cursor, take) =>
    prisma.traceChange.findMany({
      where: { traceId, seq: beforeSeq === undefined ? { gt: cursor } : { gt: cursor, lt: beforeSeq } },
      orderBy: { seq: "asc" },
      take,
    }),
  );
  for await (const page of pages) {
    const spans = await spansAsOf(prisma, traceId, page);
    for (const { spanAfter: _stored, ...change } of page) yield { ...change, span: spans.get(change.seq) ?? null };
  }
}

/** A trace's changes after `afterSeq` in seq order, REPLAY_PAGE a read (`read`: those after `cursor`, at most `limit`). */
export async function* pagesAfter<T extends { seq: number }>(afterSeq: number, read: (cursor: number, limit: number) => Promise<T[]>): AsyncGenerator<T[]> {
  let cursor = afterSeq;
  for (;;) {
    const page = await read(cursor, REPLAY_PAGE);
    if (page.length > 0) yield page;
    if (page.length < REPLAY_PAGE) return;
    cursor = page[page.length - 1]!.seq;
  }
}

/**
 * The span of each span change of a page as it was after that change (trace-writes.ts,
 * StoredSpanChange): the spans' current rows, and the undo records of their later changes — in
 * the page, or after it for a span still open — read in at most two statements for the page. Changes logged before Dossier kept them have none here; their
 * `span` is then read as it is now.
 */
async function spansAsOf(
  prisma: PrismaClient,
  traceId: string,
  page: readonly { seq: number; type: string; spanId: string | null; spanAfter: JsonValue }[],
): Promise<Map<number, SpanState>> {
  const changes = page.flatMap(({ seq, type, spanId, spanAfter }) => {
    if (spanId === null) return [];
    const stored = spanAfterOf(spanAfter);
    return stored ? [{ seq, type, spanId, stored }] : [];
  });
  const result = new Map<number, SpanState>();
  if (changes.length === 0) return result;
  const spanIds = [...new Set(changes.map((change) => change.spanId))];
  // Only a span still open at the page's last change can change after the page; an ended span
  // never changes again. Its later changes are a handful (an update or two, its end).
  const last = page[page.length - 1]!.seq;
  const ended = new Set(changes.filter((change) => change.stored.endedAt !== null).map((change) => change.spanId));
  const open = spanIds.filter((id) => !ended.has(id));
  const [spans, later] = await Promise.all([
    prisma.span.findMany({ where: { id: { in: spanIds } } }),
    open.length === 0
      ? []
      : prisma.traceChange.findMany({
          where: { traceId, seq: { gt: last }, spanId: { in: open }, type: { in: ["SPAN_UPDATED", "SPAN_ENDED"] } },
          select: { spanId: true, seq: true, spanAfter: true },
          orderBy: { seq: "desc" },
        }),
  ]);
  const inPage = changes.filter((change) => change.type !== "SPAN_STARTED").map(({ spanId, seq, stored }) => ({ spanId, seq, undo: stored.undo }));
  const afterPage = later.map(({ spanId, seq, spanAfter }) => ({ spanId, seq, undo: spanAfterOf(spanAfter)?.undo }));
  const laterChanges = [...afterPage, ...inPage.reverse()].sort((a, b) => b.seq - a.seq);
  const byId = new Map(spans.map((span) => [span.id, span]));
  for (const change of changes) {
    const current = byId.get(change.spanId);
    if (!current) continue;
    const undo = laterChanges.flatMap((row) => (row.spanId === change.spanId && row.seq > change.seq && row.undo ? [row.undo] : []));
    result.set(change.seq, spanAsOf(current, change.stored, undo));
  }
  return result;
}

/** The TRACE_EXPIRED update of a trace that expired (its seq the trace's last); null while it is kept. */
async function expiryOf(prisma: PrismaClient, traceId: string): Promise<TraceUpdate | null> {
  const trace = await prisma.trace.findUnique({ where: { id: traceId }, select: { lastSeq: true, expiredAt: true, expiredMode: true } });
  if (!trace?.expiredAt) return null;
  const mode = trace.expiredMode ?? "DELETE";
  return { traceId, seq: trace.lastSeq, type: "TRACE_EXPIRED", spanId: null, eventId: null, span: null, at: trace.expiredAt, mode };
}

/** A run that settled without ever starting (cancelled while queued) has no trace to wait for. */
async function settledWithoutTrace(prisma: PrismaClient, runId: string): Promise<boolean> {
  const run = await prisma.run.findUnique({ where: { id: runId }, select: { status: true, trace: { select: { id: true } } } });
  return !run || ((TERMINAL_STATUSES as readonly string[]).includes(run.status) && !run.trace);
}

export type LiveBuffer = ReturnType<typeof listenTrace>;

/**
 * Listens at once and keeps at most `bufferLimit` undelivered changes. When the bus's link to the
 * other instances was lost and is back (EventLinkLostError), it listens again at once and its next
 * `next()` says "idle": the changes committed meanwhile are read from the database, as after a quiet
 * spell, and the stream goes on — a trace that ended meanwhile ends with its own TRACE_ENDED.
 */
export function listenTrace({ events, traceId, bufferLimit, signal }: Pick<TraceUpdatesOptions, "events" | "traceId" | "bufferLimit" | "signal">) {
  const queue: TraceChangeMessage[] = [];
  let overflow = false;
  /** The link was lost since the database was last read for what the bus did not bring. */
  let missed = false;
  let closed = false;
  let wake: (() => void) | undefined;
  let subscription = events.subscribe("trace:change", traceId);
  const close = () => {
    closed = true;
    // A subscription the bus is ending (its link lost) rejects its return with that error: nobody waits for it.
    void Promise.resolve(subscription.return?.()).catch(() => undefined);
    wake?.();
  };
  signal?.addEventListener("abort", close, { once: true });
  void (async () => {
    for (;;) {
      try {
        for await (const change of subscription) {
          if (queue.length >= bufferLimit) overflow = true;
          else queue.push(change);
          wake?.();
        }
        return;
      } catch (error) {
        if (!closed && error instanceof EventLinkLostError) {
          // Listening again before anyone reads the database: a change committed after that read is heard.
          subscription = events.subscribe("trace:change", traceId);
          missed = true;
          wake?.();
          continue;
        }
        // The bus ended the subscription otherwise (it fell behind): changes were lost to it.
        overflow = true;
        wake?.();
        return;
      }
    }
  })();
  return {
    /** The next live change; "idle" when none came within `idleMs`. */
    async next(idleMs: number): Promise<TraceChangeMessage | "overflow" | "closed" | "idle"> {
      if (!overflow && !missed && queue.length === 0 && !signal?.aborted) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, idleMs);
        });
        clearTimeout(timer);
      }
      if (signal?.aborted) return "closed";
      if (overflow) return "overflow";
      // What was heard before the link was lost goes first; then the database is read for the rest.
      const change = queue.shift();
      if (change) return change;
      missed = false;
      return "idle";
    },
    /** The next live change if it is `last + 1` (earlier ones dropped); "wait" once one leaves a gap, or `ready` settled with none. */
    async following(last: number, ready: Promise<unknown>): Promise<TraceChangeMessage | "closed" | "wait"> {
      let settled = false;
      const done = ready.then(
        () => (settled = true),
        () => (settled = true),
      );
      for (;;) {
        while (queue.length > 0 && queue[0]!.seq <= last) queue.shift();
        if (signal?.aborted) return "closed";
        if (overflow) return "wait";
        const next = queue[0];
        if (next) return next.seq === last + 1 ? queue.shift()! : "wait";
        if (settled) return "wait";
        await Promise.race([done, new Promise<void>((resolve) => (wake = resolve))]);
      }
    },
    close() {
      signal?.removeEventListener("abort", close);
      close();
    },
  };
}
