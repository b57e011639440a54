// How an attempt's writer (write-behind.ts) writes the records queued next to each other: span
// starts, ends that only set a status, and events of one trace go in one statement
// (domain/trace/batch-statements.ts). When that statement writes nothing — the attempt lost its
// run, the trace's bound would not keep them all, a span to end is missing — the records are
// written one by one as the recorder writes them alone, which decides each the way it always did
// (the bound record by record, folded spans, a lost attempt refused with why). The records queued
// right before a one-statement write that can carry them (a tool result's log entry) ride in it.
import { isTransientDatabaseError, retryingConflicts } from "../../db/transient-errors.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { type BatchRecord, carriedBatch, writeBatchStatement } from "../../domain/trace/batch-statements.js";
import type { Carried } from "../../domain/transaction.js";
import type { StatementGuard, TraceChange } from "../../domain/trace/trace-writes.js";
import type { Attributes, SpanEventKind, SpanKind, SpanRef, SpanStatus } from "../../runtime/ports/trace-sink.js";
import type { TraceBound } from "./trace-bound.js";
import type { QueuedRecord } from "./write-behind.js";

export type SpanInput = { traceId: string; parent?: SpanRef; kind: SpanKind; name: string; attributes?: Attributes };

export type PendingEvent = QueuedRecord & { traceId: string; spanId: string; kind: SpanEventKind; messageId: string | null; at: Date };
/**
 * A span's start as queued, under the id already handed out. Its attributes are not counted in
 * the batch's size: the one span whose attributes are large, a model call, is followed by its
 * end, which is a write of its own.
 */
export type PendingStart = QueuedRecord & { type: "start"; traceId: string; id: string; input: SpanInput; at: Date };
export type PendingEnd = QueuedRecord & { type: "end"; traceId: string; span: SpanRef; status: SpanStatus; at: Date };
export type PendingRecord = (PendingEvent & { type: "event" }) | PendingStart | PendingEnd;

/** What the recorder lends its writer: its state, and how it writes each record alone. */
export type RecordWriter = {
  prisma: PrismaClient;
  bound: TraceBound;
  guard: StatementGuard | undefined;
  resolve: (span: SpanRef) => SpanRef;
  announce: (changes: readonly TraceChange[]) => void;
  unlessLost: () => void;
  startSpan: (start: PendingStart) => Promise<void>;
  endSpan: (end: PendingEnd) => Promise<void>;
  writeEvents: (events: PendingEvent[]) => Promise<void>;
};

export const ignore = () => undefined;

/** Writes queued records in order, as few statements as they allow, and settles each. */
export async function writeQueued(writer: RecordWriter, batch: readonly PendingRecord[]): Promise<void> {
  for (let from = 0; from < batch.length; ) {
    const chunk = chunkAt(batch, from);
    from += chunk.length;
    if (!(await writeTogether(writer, chunk))) await writeAlone(writer, chunk);
  }
}

/** The records from `from` that one statement can hold: of one trace, no span ended twice. */
function chunkAt(batch: readonly PendingRecord[], from: number): PendingRecord[] {
  const { traceId } = batch[from]!;
  const ended = new Set<string>();
  let to = from;
  for (; to < batch.length; to++) {
    const record = batch[to]!;
    if (record.traceId !== traceId) break;
    if (record.type === "end") {
      if (ended.has(record.span.id)) break;
      ended.add(record.span.id);
    }
  }
  return batch.slice(from, to);
}

/** Writes the records in one statement; false when it wrote nothing. */
async function writeTogether(writer: RecordWriter, chunk: readonly PendingRecord[]): Promise<boolean> {
  const { traceId } = chunk[0]!;
  // Past the bound, events are dropped and spans folded record by record.
  if (writer.bound.knownTruncated(traceId)) return false;
  writer.unlessLost();
  const { records, written } = asBatch(writer, chunk);
  if (records.length === 0) return true;
  // Run again if it loses to a span row's move into the retained partition (as a span's end alone is).
  const changes = await retryingConflicts(() => writeBatchStatement(writer.prisma, traceId, records, writer.guard, writer.bound.maxRecords));
  if (!changes) return false;
  settleWritten(writer, written, changes);
  return true;
}

/**
 * Sends `statement` (one statement of the attempt that can carry a write: transaction.ts,
 * Carried) with `records` — queued right before it, not written yet — riding in it, so that they
 * reach the database in its round trip, and it is written only if they are. When they do not go
 * in one statement (more than one trace, a span ended twice, a trace past its bound) or its check
 * refused them (the fence, the bound, a span to end missing), they are written as before — which
 * refuses a lost attempt and says why — and then `statement` alone.
 */
export async function sendCarrying<T>(
  writer: RecordWriter,
  records: readonly PendingRecord[],
  statement: (carry: Carried | undefined) => Promise<T | null>,
): Promise<T | null> {
  const carried = records.length > 0 ? carriedRecords(writer, records) : { carry: undefined, settled: () => true };
  if (carried?.carry) {
    writer.unlessLost();
    let done: T | null;
    try {
      // Run again if it loses to a span row's move into the retained partition (as the records alone are).
      done = await retryingConflicts(() => statement(carried.carry));
    } catch (error) {
      // A statement that failed for a reason of its own (not the link, not the fence, which the
      // records' own write refuses too) wrote nothing: the records are written on their own, as
      // they were before it, so that the end the caller writes next finds the answer's trace kept.
      if (!carried.settled() && !isTransientDatabaseError(error)) await writeQueued(writer, records).catch(() => undefined);
      throw error;
    }
    if (carried.settled()) return done;
  }
  if (!carried?.settled()) await writeQueued(writer, records);
  writer.unlessLost();
  return statement(undefined);
}

/** The records as a write to carry (null: they do not go in one statement); `settled`: it was written, each record settled. */
function carriedRecords(writer: RecordWriter, batch: readonly PendingRecord[]): { carry: Carried | undefined; settled(): boolean } | null {
  const { traceId } = batch[0]!;
  if (chunkAt(batch, 0).length < batch.length || writer.bound.knownTruncated(traceId)) return null;
  const { records, written } = asBatch(writer, batch);
  if (records.length === 0) return { carry: undefined, settled: () => true };
  let settled = false;
  const carry = carriedBatch(traceId, records, writer.bound.maxRecords, (changes) => {
    settled = true;
    settleWritten(writer, written, changes);
  });
  return { carry, settled: () => settled };
}

/** Announces what a statement wrote of `written` and settles each with its seq. */
function settleWritten(writer: RecordWriter, written: readonly PendingRecord[], changes: readonly TraceChange[]): void {
  writer.announce(changes);
  for (const [index, record] of written.entries()) record.resolve(changes[index]!.seq);
}

/** The records as one batch statement takes them; the ends of spans the trace did not keep are settled at once (nothing to write). */
function asBatch(writer: RecordWriter, chunk: readonly PendingRecord[]): { records: BatchRecord[]; written: PendingRecord[] } {
  const { traceId } = chunk[0]!;
  const written: PendingRecord[] = [];
  const records: BatchRecord[] = [];
  for (const record of chunk) {
    if (record.type === "event") {
      const spanId = writer.resolve({ id: record.spanId, traceId }).id;
      records.push({ type: "event", event: { spanId, kind: record.kind, payload: record.payload, messageId: record.messageId, at: record.at } });
    } else if (record.type === "start") {
      const { input } = record;
      const parentId = input.parent ? writer.resolve(input.parent).id : null;
      records.push({ type: "start", id: record.id, parentId, kind: input.kind, name: input.name, attributes: input.attributes, at: record.at });
    } else {
      const target = writer.resolve(record.span);
      // A span the trace did not keep ends without a write (only its usage would be written, and this end has none).
      if (writer.bound.isFolded(target)) {
        record.resolve(0);
        continue;
      }
      records.push({ type: "end", spanId: target.id, status: record.status, at: record.at });
    }
    written.push(record);
  }
  return { records, written };
}

/** Writes the records one by one (events next to each other together), as each is written alone. */
async function writeAlone(writer: RecordWriter, chunk: readonly PendingRecord[]): Promise<void> {
  for (let index = 0; index < chunk.length; ) {
    const record = chunk[index]!;
    if (record.type === "event") {
      const events: PendingEvent[] = [];
      while (chunk[index]?.type === "event") events.push(chunk[index++] as PendingEvent);
      await writer.writeEvents(events);
      continue;
    }
    index += 1;
    await (record.type === "start" ? writer.startSpan(record) : writer.endSpan(record));
    record.resolve(0);
  }
}
