// The records of many attempts in few statements. Attempts of one worker write their records to
// the database each in a statement of its own (queued-records.ts); when many of them start
// together — a claim's runs, each writing its first turn's records (its TURN and MODEL_CALL
// starts, its budget) right after its first model request went out — those statements come
// one per run, each a round trip the worker's one thread pays for. Here, a fenced batch goes at
// once when none is on its way; those asked for meanwhile go together in the next statement
// (batch-statements.ts, writeBatchStatements), each behind its own fence. A batch that statement
// did not write — its attempt lost its run, its trace's bound, its run's row held by another
// transaction — or a statement the database refused is sent alone, exactly as it was before, so
// what is written, refused or thrown for an attempt does not depend on who it went with.
import { isTransientDatabaseError, retryingConflicts } from "../../db/transient-errors.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { type TraceBatch, writeBatchStatement, writeBatchStatements } from "../../domain/trace/batch-statements.js";
import type { TraceChange } from "../../domain/trace/trace-writes.js";

/** The most batches one statement takes. */
const MOST_BATCHES = 32;

type Waiting = TraceBatch & { resolve: (changes: TraceChange[] | null) => void; reject: (error: unknown) => void };
type Line = { sending: boolean; waiting: Waiting[] };

const lines = new WeakMap<PrismaClient, Line>();

/** Writes `batch` as writeBatchStatement does, with other attempts' batches asked for while one was on its way. */
export function writeBatchJointly(db: PrismaClient, batch: TraceBatch): Promise<TraceChange[] | null> {
  let line = lines.get(db);
  if (!line) lines.set(db, (line = { sending: false, waiting: [] }));
  const joined = line;
  return new Promise((resolve, reject) => {
    joined.waiting.push({ ...batch, resolve, reject });
    if (!joined.sending) void send(db, joined);
  });
}

/** Sends what waits, one statement at a time, until nothing does. */
async function send(db: PrismaClient, line: Line): Promise<void> {
  line.sending = true;
  while (line.waiting.length > 0) {
    const batches = takeDistinct(line.waiting);
    if (batches.length === 1) await alone(db, batches[0]!);
    else await together(db, batches);
  }
  line.sending = false;
}

/** Up to MOST_BATCHES of the waiting batches, one per trace (a statement updates a trace's row once), in order. */
function takeDistinct(waiting: Waiting[]): Waiting[] {
  const traces = new Set<string>();
  const taken: Waiting[] = [];
  for (let index = 0; index < waiting.length && taken.length < MOST_BATCHES; ) {
    const batch = waiting[index]!;
    if (traces.has(batch.traceId)) {
      index += 1;
      continue;
    }
    traces.add(batch.traceId);
    taken.push(...waiting.splice(index, 1));
  }
  return taken;
}

async function together(db: PrismaClient, batches: Waiting[]): Promise<void> {
  let written: (TraceChange[] | null)[] | null;
  try {
    // Run again if it loses to a span row's move into the retained partition (as a batch alone is).
    written = await retryingConflicts(() => writeBatchStatements(db, batches));
  } catch (error) {
    // The link failed or timed out: whether the statement committed is unknown, so nothing is sent
    // again — each attempt's write fails as its own statement would have. Any other failure was
    // the database refusing the statement, which then wrote nothing: each batch goes alone.
    if (isTransientDatabaseError(error)) {
      for (const batch of batches) batch.reject(error);
      return;
    }
    written = null;
  }
  await Promise.all(
    batches.map((batch, index) => {
      const changes = written?.[index];
      if (!changes) return alone(db, batch);
      batch.resolve(changes);
      return undefined;
    }),
  );
}

function alone(db: PrismaClient, batch: Waiting): Promise<void> {
  return retryingConflicts(() => writeBatchStatement(db, batch.traceId, batch.records, batch.guard, batch.maxRecords)).then(batch.resolve, batch.reject);
}
