// Runs admitted and claimed by one worker ("worker-1"), without a runtime: what tests of the
// trace records' fenced batches write behind (test/trace/joint-batches, claim-first-records).
import { expect } from "vitest";
import { holdsRunSql } from "../../src/domain/runs/holder.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import type { BatchRecord, TraceBatch } from "../../src/domain/trace/batch-statements.js";
import { newSpanId } from "../../src/domain/trace/span-ids.js";
import { createEventBus } from "../../src/events/topics.js";
import { type backends, openMigratedTestDatabase } from "./databases.js";
import { admit } from "./fixtures.js";
import { startTestApp, type TestApp } from "./test-app.js";

export type ClaimedRun = { id: string; attempt: number; parent: string };

/** `count` runs admitted and claimed; their ids, attempts and run spans, and the database's URL. */
export async function claimedRuns(backend: (typeof backends)[number], count: number, closing: <T extends TestApp>(app: T) => T) {
  let url: string | undefined;
  const t = closing(
    await startTestApp(backend, {
      database: async () => {
        const opened = await openMigratedTestDatabase(backend);
        url = opened.url;
        return opened;
      },
    }),
  );
  const prisma = t.app.db.prisma;
  const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
  for (let i = 0; i < count; i += 1) await admit(t.client, { question: `question ${i}` });
  const claimed = await runs.claimMany(
    {
      ...{ workerId: "worker-1", leaseMs: 60_000, leaseMarginMs: 1_000, maxRunningPerPrincipal: 100 },
      ...{ liveness: async () => true, describeRun: (r: { id: string }) => ({ name: r.id, attributes: {} }) },
    },
    count,
  );
  expect(claimed).toHaveLength(count);
  return { prisma, url: url!, runs: claimed.map((c): ClaimedRun => ({ id: c.run.id, attempt: c.number, parent: c.span.id })) };
}

/** A TURN span started under the run's span. */
export const turnStart = (run: ClaimedRun): BatchRecord[] => [
  { type: "start", id: newSpanId(), parentId: run.parent, kind: "TURN", name: "turn 1", at: new Date() },
];

/** `records` of `run`'s trace, behind its attempt's fence. */
export const batchOf = (run: ClaimedRun, records: BatchRecord[] = turnStart(run)): TraceBatch => ({
  traceId: run.id,
  records,
  guard: { runId: run.id, attempt: run.attempt, workerId: "worker-1", holdsRunSql },
});
