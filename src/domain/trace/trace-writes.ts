// Writing a run's trace inside a caller's transaction (T1–T3). Every change takes the trace's
// next sequence numbers and writes its replay-log row in that same transaction; the caller
// publishes the returned changes after commit. Keeping these in one place lets whoever owns the
// transaction — a run attempt's fenced write, a claim that takes a run over, a cancellation —
// change the trace atomically with what it reports.
import { randomUUID } from "node:crypto";
import { queryRows } from "../../db/direct-statements.js";
import type { EventPublisher, SpanState, TraceChangeMessage } from "../../events/topics.js";
import type { Prisma, Span, SpanEventKind, SpanKind, SpanStatus } from "../../generated/prisma/client.js";
import { toStored, toStoredJson } from "../text/stored-text.js";
import { newSpanId } from "./span-ids.js";
import { attributesOf, type JsonObject, type JsonValue, toJsonColumn, untypedJsonColumn } from "../json-columns.js";

type Tx = Prisma.TransactionClient;
export type TraceChange = TraceChangeMessage;
export type SpanAttributes = Record<string, unknown>;
export type SpanUsage = { input: number; output: number; cached: number; reasoning: number };

/** How much of an event's payload is shown unless the full payload is asked for (T4). */
export const EVENT_PREVIEW_CHARS = 500;

/**
 * The attempt fence's check carried inside one statement: who must hold the run, and the check
 * itself as SQL over the parameters $first, $first+1, $first+2 (domain/runs/holder.ts writes it).
 */
export type StatementGuard = { runId: string; attempt: number; workerId: string; holdsRunSql: (first: number) => string };

/** Announces committed trace changes to live subscribers (after commit, never before). */
export function publishTraceChanges(events: EventPublisher, changes: readonly (TraceChange | null)[]): void {
  for (const change of changes) if (change) events.publish("trace:change", change.traceId, change);
}

/** Takes `count` sequence numbers of the trace; returns the first. */
async function takeSeqs(tx: Tx, traceId: string, count: number): Promise<number> {
  const { lastSeq } = await tx.trace.update({
    where: { id: traceId },
    data: { lastSeq: { increment: count } },
    select: { lastSeq: true },
  });
  return lastSeq - count + 1;
}

/**
 * What a span change keeps in its replay-log row (`trace_change.span_after`): the fields a change
 * moves — status, end, usage — as they were after it, and, instead of a copy of the attributes
 * (a model call's hold its whole request), how to undo what it did to them: the values of the
 * keys it replaced (`before`) and the keys it added (`added`). A replay rebuilds the attributes as
 * of a change from the span's current ones by undoing the later changes (spanAsOf), so each
 * span's attributes are stored once.
 */
export type StoredSpanChange = {
  status: string;
  endedAt: string | null;
  usage: JsonValue;
  /** Stored only when set (a priced or unpriced model call's end): absent means no cost, as in changes logged before spans had one. */
  cost?: string | null;
  costUnpriced?: boolean;
  undo?: AttributesUndo;
};
export type AttributesUndo = { before: JsonObject; added: string[] };

async function logChange(
  tx: Tx,
  change: { traceId: string; seq: number; type: TraceChange["type"]; span?: Span; undo?: AttributesUndo; at: Date },
): Promise<TraceChange> {
  const span = change.span ? spanState(change.span) : null;
  const row = { traceId: change.traceId, seq: change.seq, type: change.type, spanId: span?.id ?? null, eventId: null, at: change.at };
  const stored: StoredSpanChange | undefined = span
    ? {
        status: span.status,
        endedAt: span.endedAt,
        usage: span.usage,
        ...(span.cost !== null ? { cost: span.cost } : {}),
        ...(span.costUnpriced ? { costUnpriced: true } : {}),
        ...(change.undo ? { undo: change.undo } : {}),
      }
    : undefined;
  await tx.traceChange.create({ data: { ...row, spanAfter: stored ? toJsonColumn(stored) : undefined } });
  // Live subscribers get the whole span as it is now, which is as of this change.
  return { ...row, span, at: change.at.toISOString() };
}

/**
 * The span as it was after a change, from its current row, what the change stored, and the undo
 * records of the span's later changes, newest first.
 */
export function spanAsOf(current: Span, stored: StoredSpanChange, laterUndo: readonly AttributesUndo[]): SpanState {
  const attributes = { ...attributesOf(current.attributes) };
  for (const undo of laterUndo) {
    for (const key of undo.added) delete attributes[key];
    Object.assign(attributes, undo.before);
  }
  const state = spanState(current);
  const cost = { cost: stored.cost ?? null, costUnpriced: stored.costUnpriced ?? false };
  return { ...state, status: stored.status, endedAt: stored.endedAt, usage: stored.usage, ...cost, attributes };
}

/** What a span change carries: the row as written, its times as ISO strings (it is published as JSON). */
function spanState(span: Span): SpanState {
  return {
    id: span.id,
    traceId: span.traceId,
    parentId: span.parentId,
    kind: span.kind,
    name: span.name,
    status: span.status,
    attributes: span.attributes,
    usage: span.usage,
    cost: span.cost === null ? null : span.cost.toFixed(),
    costUnpriced: span.costUnpriced,
    startedAt: span.startedAt.toISOString(),
    endedAt: span.endedAt?.toISOString() ?? null,
  };
}

/** The run's trace, created on first use. It shares the run's id, so logs and subscribers key on either. */
export async function ensureTrace(tx: Tx, runId: string): Promise<string> {
  const trace = await tx.trace.upsert({ where: { runId }, create: { id: runId, runId }, update: {}, select: { id: true } });
  return trace.id;
}

/** What `maxRecords` stands for when a write has no bound (the largest count the column holds). */
const UNBOUNDED = 2_147_483_647;

/** `id`: the span's id when the caller made it already (newSpanId), so its reference could be handed out before the write. */
type NewSpan = { id?: string; traceId: string; parentId?: string | null; kind: SpanKind; name: string; attributes?: SpanAttributes; at: Date };

export async function startSpanIn(tx: Tx, input: NewSpan): Promise<{ spanId: string; change: TraceChange }> {
  return (await startBoundedSpanIn(tx, input, UNBOUNDED))!;
}

/**
 * Starts a span unless the trace already holds `maxRecords` spans and events: then nothing is
 * written and the result is null. The span is counted either way, in the statement that takes
 * its seq number (no count of rows).
 */
export async function startBoundedSpanIn(tx: Tx, input: NewSpan, maxRecords: number): Promise<{ spanId: string; change: TraceChange } | null> {
  const [taken] = await tx.$queryRawUnsafe<{ seq: number; kept: boolean }[]>(
    `UPDATE trace SET last_seq = last_seq + CASE WHEN records < $2::int THEN 1 ELSE 0 END, records = records + 1
     WHERE id = $1 RETURNING last_seq AS seq, records <= $2::int AS kept`,
    input.traceId,
    Math.min(maxRecords, UNBOUNDED),
  );
  if (!taken) throw new Error(`trace ${input.traceId} does not exist`);
  if (!taken.kept) return null;
  const seq = Number(taken.seq);
  const span = await tx.span.create({
    data: {
      id: input.id ?? newSpanId(),
      traceId: input.traceId,
      parentId: input.parentId ?? null,
      kind: input.kind,
      name: toStored(input.name),
      attributes: untypedJsonColumn(toStoredJson(input.attributes ?? {})),
      startedAt: input.at,
    },
  });
  return { spanId: span.id, change: await logChange(tx, { traceId: input.traceId, seq, type: "SPAN_STARTED", span, at: input.at }) };
}

/** A model call's own cost (USD, a decimal string), or null when its model had no price. */
export type SpanCost = { amount: string | null };

/** Merges attributes, sets usage (and the cost it came to) and, with a status, ends the span. */
export async function changeSpanIn(
  tx: Tx,
  span: { id: string; traceId: string },
  change: { status?: SpanStatus; attributes?: SpanAttributes; usage?: SpanUsage; cost?: SpanCost; at: Date },
): Promise<TraceChange> {
  const seq = await takeSeqs(tx, span.traceId, 1);
  const current = change.attributes ? await tx.span.findUniqueOrThrow({ where: { id: span.id }, select: { attributes: true } }) : null;
  const set = change.attributes ? toStoredJson(change.attributes) : null;
  const before = attributesOf(current?.attributes ?? {});
  const merged = set ? { ...before, ...set } : null;
  const undo = set
    ? {
        before: Object.fromEntries(
          Object.keys(set)
            .filter((key) => key in before)
            .map((key) => [key, before[key]]),
        ),
        added: Object.keys(set).filter((key) => !(key in before)),
      }
    : undefined;
  const after = await tx.span.update({
    where: { id: span.id },
    data: {
      ...(change.status ? { status: change.status, endedAt: change.at } : {}),
      ...(change.usage ? { usage: change.usage } : {}),
      ...(change.cost ? { cost: change.cost.amount, costUnpriced: change.cost.amount === null } : {}),
      ...(merged ? { attributes: untypedJsonColumn(merged) } : {}),
    },
  });
  const type = change.status ? "SPAN_ENDED" : "SPAN_UPDATED";
  return logChange(tx, { traceId: span.traceId, seq, type, span: after, undo, at: change.at });
}

/**
 * An event to append. A `messageId` says the payload is that log message's content: the log keeps
 * it, and the event only its preview and size, so a tool's result is stored once (T4).
 */
export type NewEvent = { spanId: string; kind: SpanEventKind; payload: string | object; messageId?: string | null; at: Date };

/** Appends one event (see appendEventsIn). */
export async function appendEventIn(tx: Tx, span: { id: string; traceId: string }, event: Omit<NewEvent, "spanId">): Promise<TraceChange> {
  const [change] = (await appendEventsIn(tx, span.traceId, [{ spanId: span.id, ...event }]))!;
  return change!;
}

/**
 * Appends events to one trace with one statement: the sequence numbers are taken in one step
 * (the trace row's lock keeps them gap-free across writers) and given in the order of `events`;
 * each event's replay-log row is written with it. An object payload is stored as JSON; every
 * payload is stored losslessly (stored-text.ts). What a recorder's group commit writes.
 *
 * With `guard`, the statement carries the attempt fence's check (domain/runs/holder.ts):
 * it locks the run row and writes nothing unless the run is still RUNNING under that attempt and
 * worker; then it returns null. One statement is atomic on its own, so the caller
 * needs no transaction around it.
 */
/** What stands for the check without a guard: never read ($4 is null), it only types $5 and $6. */
const UNGUARDED = "SELECT $5::int AS attempt, $6::text AS worker";

export async function appendEventsIn(
  db: Tx,
  traceId: string,
  events: readonly NewEvent[],
  guard?: StatementGuard,
  /**
   * The spans and events the trace may hold: the events past it are counted but not written, and
   * the changes returned are those of the events kept (the first ones of `events`).
   */
  maxRecords: number = UNBOUNDED,
): Promise<TraceChange[] | null> {
  const rows = events.map((event, index) => ({ n: index + 1, ...storedEvent(event) }));
  // Kept: as many as the bound leaves room for, from the count before this write (records - n).
  const kept = "LEAST($2::int, GREATEST($7::int - (records - $2::int), 0))";
  const [taken] = await queryRows<{ base: number; kept: number }>(
    db,
    `WITH holder AS (${guard ? guard.holdsRunSql(4) : UNGUARDED}),
     seqs AS (
       UPDATE trace SET last_seq = last_seq + LEAST($2::int, GREATEST($7::int - records, 0)), records = records + $2::int
       WHERE id = $1 AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM holder))
       RETURNING last_seq - ${kept} AS base, ${kept} AS kept
     ),
     input AS (SELECT * FROM jsonb_to_recordset($3::jsonb) AS r(n int, id text, span_id text, kind text, payload text, message_id text, preview text, payload_size int, at timestamptz)),
     events AS (
       INSERT INTO span_event (id, span_id, seq, kind, payload, message_id, preview, payload_size, at)
       SELECT input.id, input.span_id, seqs.base + input.n, input.kind::"SpanEventKind", input.payload, input.message_id, input.preview, input.payload_size, input.at
       FROM input, seqs WHERE input.n <= seqs.kept
     ),
     changes AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, event_id, at)
       SELECT $1, seqs.base + input.n, 'EVENT_APPENDED'::"TraceChangeType", input.span_id, input.id, input.at FROM input, seqs WHERE input.n <= seqs.kept
     )
     SELECT base, kept FROM seqs`,
    traceId,
    rows.length,
    JSON.stringify(rows),
    guard?.runId ?? null,
    guard?.attempt ?? null,
    guard?.workerId ?? null,
    Math.min(maxRecords, UNBOUNDED),
  );
  if (!taken) {
    if (guard) return null;
    throw new Error(`trace ${traceId} does not exist`);
  }
  return rows.slice(0, Number(taken.kept)).map((row, index) => ({
    traceId,
    seq: Number(taken.base) + row.n,
    type: "EVENT_APPENDED" as const,
    spanId: row.span_id,
    eventId: row.id,
    span: null,
    at: events[index]!.at.toISOString(),
  }));
}

/** An event's row as stored (its id made here): the payload kept once, its preview and size (T4). */
export function storedEvent(event: NewEvent) {
  const text = toStored(typeof event.payload === "string" ? event.payload : JSON.stringify(event.payload));
  const messageId = event.messageId ?? null;
  return {
    id: randomUUID(),
    span_id: event.spanId,
    kind: event.kind,
    payload: messageId ? "" : text,
    message_id: messageId,
    preview: previewOf(text),
    payload_size: Buffer.byteLength(text, "utf8"),
    at: event.at.toISOString(),
  };
}

/** The first characters of a stored payload, never ending inside a surrogate pair or an escape. */
function previewOf(text: string): string {
  let end = Math.min(text.length, EVENT_PREVIEW_CHARS);
  if (end < text.length && /[\uD800-\uDBFF\uFFFF]/.test(text[end - 1]!)) end -= 1;
  return text.slice(0, end);
}

/**
 * Ends every span of the trace that is still RUNNING (the root RUN span only with `includeRoot`)
 * with `status`, each with an INTERRUPTION event saying why. Whoever supersedes or stops an
 * attempt calls this in the same transaction, so no span outlives what it was part of.
 */
export async function endOpenSpansIn(
  tx: Tx,
  input: {
    traceId: string;
    status: Extract<SpanStatus, "INTERRUPTED" | "CANCELLED">;
    reason: string;
    includeRoot: boolean;
    /** Spans the caller ends itself, with a status of its own. */
    except?: string[];
    at: Date;
  },
): Promise<TraceChange[]> {
  const open = await tx.span.findMany({
    where: {
      traceId: input.traceId,
      status: "RUNNING",
      ...(input.includeRoot ? {} : { kind: { not: "RUN" } }),
      ...(input.except?.length ? { id: { notIn: input.except } } : {}),
    },
    select: { id: true },
    orderBy: [{ startedAt: "desc" }, { id: "desc" }],
  });
  const changes: TraceChange[] = [];
  // Innermost first, so a subscriber never sees a parent end before its children.
  for (const span of open) {
    const ref = { id: span.id, traceId: input.traceId };
    changes.push(await appendEventIn(tx, ref, { kind: "INTERRUPTION", payload: input.reason, at: input.at }));
    changes.push(await changeSpanIn(tx, ref, { status: input.status, at: input.at }));
  }
  return changes;
}
