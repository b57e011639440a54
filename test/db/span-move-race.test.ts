// A live run's span changing while a week's expiry moves the span's row into the retained
// partition (PostgreSQL). The change's UPDATE waits for the move's row lock; once the move
// commits, PostgreSQL fails the waiting UPDATE with a serialization failure (the row it waited for
// now lives in another partition). The recorder runs such a change again, so the span is ended
// with its attributes, where it now lives, and the run never sees the failure.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/open-database.js";
import { isTransactionConflict } from "../../src/db/transient-errors.js";
import { changeSpanIn } from "../../src/domain/trace/trace-writes.js";
import { createEventBus } from "../../src/events/topics.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { waitUntil } from "../support/wait.js";

describe.skipIf(!backends.includes("postgres"))("a span change racing its move to the retained partition (postgres)", () => {
  let db: Database;
  let url: string;
  let dispose: () => Promise<void>;
  let recorder: PrismaTraceRecorder;
  beforeAll(async () => {
    const opened = await openMigratedTestDatabase("postgres");
    ({ db, dispose } = opened);
    url = opened.url!;
    recorder = new PrismaTraceRecorder({ prisma: db.prisma, events: createEventBus() });
  }, 60_000);
  afterAll(() => dispose());

  /** A running run's trace with one open span, in the current week's partition. */
  async function liveSpan() {
    const run = await createBareRun(db.prisma, { status: "RUNNING" });
    const traceId = await recorder.traceFor(run.runId);
    return recorder.startSpan({ traceId, kind: "TOOL_CALL", name: "fetch_report" });
  }

  const partitionOf = async (spanId: string) =>
    (await db.prisma.$queryRawUnsafe<{ partition: string }[]>(`SELECT tableoid::regclass::text AS partition FROM span WHERE id = $1`, spanId))[0]?.partition;

  /**
   * Moves the span's row to the retained partition in a transaction of its own (as a week's
   * expiry does), holds it open until `racing` waits for the row's lock, then commits.
   */
  async function moveWhile<T>(spanId: string, racing: () => Promise<T>): Promise<PromiseSettledResult<T>> {
    const mover = new pg.Client({ connectionString: url });
    await mover.connect();
    try {
      await mover.query("BEGIN");
      await mover.query(`UPDATE span SET period = 'infinity' WHERE id = $1`, [spanId]);
      const [settled] = [Promise.allSettled([racing()])];
      await waitUntil(async () => {
        const [row] = await db.prisma.$queryRawUnsafe<{ waiting: boolean }[]>(
          `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock') AS waiting`,
        );
        return row?.waiting ? true : undefined;
      });
      await mover.query("COMMIT");
      return (await settled)[0]!;
    } finally {
      await mover.end();
    }
  }

  it("races for real: a change that is not run again fails with a serialization failure", async () => {
    const span = await liveSpan();
    const outcome = await moveWhile(span.id, () => db.prisma.$transaction((tx) => changeSpanIn(tx, span, { status: "OK", at: new Date() })));
    expect(outcome.status).toBe("rejected");
    const error = (outcome as PromiseRejectedResult).reason;
    expect(String(error)).toMatch(/moved to another partition|serializ|write conflict/i);
    expect(isTransactionConflict(error)).toBe(true);
    const stored = await db.prisma.span.findUniqueOrThrow({ where: { id: span.id } });
    expect(stored.status).toBe("RUNNING");
  }, 60_000);

  it("the recorder's end of the span is run again after the move and is stored, with its attributes, in the retained partition", async () => {
    const span = await liveSpan();
    expect(await partitionOf(span.id)).not.toBe("span_retained");
    const outcome = await moveWhile(span.id, () => recorder.endSpan(span, { status: "OK", attributes: { result: "3 pages" } }));
    expect(outcome.status).toBe("fulfilled");
    const stored = await db.prisma.span.findUniqueOrThrow({ where: { id: span.id } });
    expect(stored).toMatchObject({ status: "OK", attributes: { result: "3 pages" } });
    expect(stored.endedAt).not.toBeNull();
    expect(await partitionOf(span.id)).toBe("span_retained");
    // The replay log holds the end once: the failed try wrote nothing.
    const ends = await db.prisma.traceChange.count({ where: { traceId: span.traceId, type: "SPAN_ENDED" } });
    expect(ends).toBe(1);
  }, 60_000);
});
