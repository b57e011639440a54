// The records of many attempts in few statements. Attempts of one worker write their records to
// the database each in a statement of its own (queued-records.ts); when many of them start
// together — a claim's runs, each writing its first turn's records (its TURN and MODEL_CALL
// starts, its budget) right after its first model request went out — those statements come
// one per run, each a round trip the worker's one thread pays for. Here, a fenced batch goes at
// once while fewer than IN_FLIGHT statements are on their way; only when that many are do the
// batches asked for meanwhile gather, and go together in the next statement
// (batch-statements.ts, writeBatchStatements), each behind its own fence. A batch that statement
// did not write — its attempt lost its run, its trace's bound, a row of it held by another
// transaction — or a statement the database refused or cancelled (a lock or statement timeout)
// is sent alone, exactly as it was before, so what is written, refused or thrown for an attempt
// does not depend on who it went with.
import { isTransientDatabaseError, retryingConflicts, statementRolledBack } from "../../db/transient-errors.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { type TraceBatch, writeBatchStatement, writeBatchStatements } from "../../domain/trace/batch-statements.js";
import type { TraceChange } from "../../domain/trace/trace-writes.js";

/** The most batches one statement takes, and about the most characters of payload (events' payloads) past its first batch. */
const MOST_BATCHES = 32;
const MOST_CHARS = 4_000_000;
/**
 * How many statements the line sends at once (of the pool's 10 connections by default): a batch
 * asked for while fewer are on their way goes at once, alone, so that one attempt's turn does not
 * wait for another's statement; past that, batches gather. Not a cap on statements: one on its way
 * longer than HOLD_MS gives its place up (a database that hangs gets up to IN_FLIGHT more every
 * HOLD_MS, bounded by the attempts with a batch waiting, at most one each), and the batches a joint
 * statement did not write are sent alone outside the line.
 */
export const IN_FLIGHT = 4;
/** How long a statement keeps its place among those at most (one waiting for a row's lock, which only a batch sent alone does). */
const HOLD_MS = 50;

type Waiting = TraceBatch & { chars: number; resolve: (changes: TraceChange[] | null) => void; reject: (error: unknown) => void };
type Line = { flying: number; waiting: Waiting[] };

const lines = new WeakMap<PrismaClient, Line>();

/** Writes `batch` (`chars` of payload) as writeBatchStatement does, with other attempts' batches asked for while one was on its way. */
export function writeBatchJointly(db: PrismaClient, batch: TraceBatch, chars: number): Promise<TraceChange[] | null> {
  let line = lines.get(db);
  if (!line) lines.set(db, (line = { flying: 0, waiting: [] }));
  const joined = line;
  return new Promise((resolve, reject) => {
    joined.waiting.push({ ...batch, chars, resolve, reject });
    send(db, joined);
  });
}

/** Sends what waits while fewer than IN_FLIGHT statements are on their way; each, answered or HOLD_MS old, makes room for the next. */
function send(db: PrismaClient, line: Line): void {
  while (line.flying < IN_FLIGHT && line.waiting.length > 0) {
    const batches = takeDistinct(line.waiting);
    line.flying += 1;
    void atMost(batches.length === 1 ? alone(db, batches[0]!) : together(db, batches), HOLD_MS).then(() => {
      line.flying -= 1;
      send(db, line);
    });
  }
}

/** Resolves when `sent` does (it never rejects), or after `ms`. */
async function atMost(sent: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([sent, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** The waiting batches one statement takes (at least one), one per trace (a statement updates a trace's row once), in order. */
function takeDistinct(waiting: Waiting[]): Waiting[] {
  const traces = new Set<string>();
  const taken: Waiting[] = [];
  let chars = 0;
  for (let index = 0; index < waiting.length && taken.length < MOST_BATCHES; ) {
    const batch = waiting[index]!;
    if (traces.has(batch.traceId) || (taken.length > 0 && chars + batch.chars > MOST_CHARS)) {
      index += 1;
      continue;
    }
    traces.add(batch.traceId);
    chars += batch.chars;
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
    // The link failed: whether the statement committed is unknown, so nothing is sent again —
    // each attempt's write fails as its own statement would have. Any other failure (the database
    // refusing the statement, or cancelling it for a lock or statement timeout one batch of it
    // met) wrote nothing: each batch goes alone.
    if (isTransientDatabaseError(error) && !statementRolledBack(error)) {
      for (const batch of batches) batch.reject(error);
      return;
    }
    written = null;
  }
  // The batches it did not write go alone, each on its own: the line does not wait for them.
  for (const [index, batch] of batches.entries()) {
    const changes = written?.[index];
    if (changes) batch.resolve(changes);
    else void alone(db, batch);
  }
}

function alone(db: PrismaClient, batch: Waiting): Promise<void> {
  return retryingConflicts(() => writeBatchStatement(db, batch.traceId, batch.records, batch.guard, batch.maxRecords)).then(batch.resolve, batch.reject);
}
