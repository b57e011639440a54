// The runs of a claim start together, and each writes its first turn's records (its TURN and
// MODEL_CALL spans' starts, its budget) right after its first model request went out. Those
// writes go to the database together — one that finds fewer than IN_FLIGHT on their way goes at
// once, those asked for meanwhile in the next statement (trace/record/joint-batches.ts) — not one
// statement per run. Each batch in such a statement stays behind its own attempt's fence: a run its attempt
// lost gets nothing written, and a run whose row another transaction holds holds nobody else up.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { writeBatchStatements } from "../../src/domain/trace/batch-statements.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { IN_FLIGHT } from "../../src/trace/record/joint-batches.js";
import { batchOf, claimedRuns } from "../support/claimed-runs.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp } from "../support/test-app.js";

/** Runs admitted while the worker is stopped, then claimed in its rounds (claim-passes.ts: 1, 4, then the other 11). */
const RUNS = 16;
/** The statement beginning a claim's first attempts (first-attempt-statement.ts): one per claim. */
const CLAIM = /^\s*WITH runs AS \(/;
/** A statement writing queued trace records: one attempt's (`batch_input`) or several attempts' (`batch1_input`, …). */
const RECORDS = /\bbatch\d*_input AS \(/;
const closing = closedAfterEach();

describe.each(backends)("the first records of a claim's runs on %s", (backend) => {
  it(`go to the database in at most IN_FLIGHT + 1 statements per claim, not one per run (${RUNS} runs)`, async () => {
    const statements: string[] = [];
    // The answers wait until every run has made its first model request and written its records.
    let requests = 0;
    let release: () => void = () => undefined;
    const allAsked = new Promise<void>((resolve) => (release = resolve));
    const stub = closing(
      await startOpenAIStreamStub(() => {
        requests += 1;
        return { text: ["Done."], pause: { index: 0, until: allAsked } };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxConcurrency: RUNS });
    const t = closing(
      await startTestApp(backend, {
        database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
        runtime: { model, concurrency: RUNS, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-first-records-")) },
      }),
    );
    const worker = t.app.runtime!.worker;
    await worker.stop();
    const admitted = [];
    for (let i = 0; i < RUNS; i += 1) admitted.push((await admit(t.client, { question: `question ${i}` })).run);
    const from = statements.length;
    worker.start();
    await vi.waitFor(() => expect(requests).toBe(RUNS), { timeout: 20_000 });
    await vi.waitFor(async () => expect(await t.app.db.prisma.span.count({ where: { kind: "MODEL_CALL" } })).toBe(RUNS), { timeout: 10_000 });
    const sent = statements.slice(from);
    release();
    const views = [];
    for (const run of admitted) views.push(await settled(t.client, run.id));
    const claims = sent.filter((sql) => CLAIM.test(sql)).length;
    expect(claims).toBeGreaterThan(0);
    expect(claims).toBeLessThanOrEqual(4);
    // Each claim's runs wrote their first turn's records in at most IN_FLIGHT + 1 statements: the
    // first IN_FLIGHT runs' at once, each alone, the others' together once those are on their way
    // (16 statements, one per run, before joint statements).
    const records = sent.filter((sql) => RECORDS.test(sql)).length;
    expect(records).toBeLessThanOrEqual((IN_FLIGHT + 1) * claims);
    expect(records).toBeLessThan(RUNS);
    // Every run's trace holds what they wrote, as before: its turn and its model call, ended.
    for (const view of views) {
      expect(view.status).toBe("SUCCEEDED");
      const kinds = view.trace!.spans.map((span) => `${span.kind} ${span.status}`).sort();
      expect(kinds).toEqual(["ATTEMPT OK", "MODEL_CALL OK", "RUN OK", "TURN OK"]);
    }
  });

  it("are written each behind its own attempt's fence: a run its attempt lost gets nothing, a run held elsewhere holds nobody up", async () => {
    const { prisma, url, runs } = await claimedRuns(backend, 3, closing);
    const [kept, lost, held] = runs;
    // The second run's lease went to another worker; the third's row is held by another transaction (PostgreSQL).
    await prisma.$executeRawUnsafe("UPDATE run SET lease_owner = 'worker-2' WHERE id = $1", lost!.id);
    const other = backend === "postgres" ? new pg.Client({ connectionString: url }) : undefined;
    await other?.connect();
    await other?.query("BEGIN");
    await other?.query("SELECT 1 FROM run WHERE id = $1 FOR UPDATE", [held!.id]);
    const batches = [kept!, lost!, held!].map((run) => batchOf(run));
    const written = await writeBatchStatements(prisma, batches);
    await other?.query("COMMIT");
    await other?.end();
    expect(written.map((changes) => changes?.map((change) => [change.seq, change.type, change.span?.kind]) ?? null)).toEqual([
      [[3, "SPAN_STARTED", "TURN"]],
      null,
      backend === "postgres" ? null : [[3, "SPAN_STARTED", "TURN"]],
    ]);
    const turns = await prisma.span.findMany({ where: { kind: "TURN" }, select: { traceId: true } });
    expect(turns.map((span) => span.traceId).sort()).toEqual((backend === "postgres" ? [kept!.id] : [kept!.id, held!.id]).sort());
    const seqs = await prisma.trace.findMany({ where: { id: { in: [lost!.id] } }, select: { lastSeq: true, records: true } });
    expect(seqs).toEqual([{ lastSeq: 2, records: 2 }]);
  });

  it.runIf(backend === "postgres")("hold nobody up when another transaction holds a batch's trace or span row, nor keep the others' runs locked", async () => {
    const { prisma, url, runs } = await claimedRuns(backend, 3, closing);
    const [free, spanHeld, traceHeld] = runs;
    // Another transaction holds one trace's row (a retention sweep) and another's span row (a week's expiry moving a live trace).
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query("BEGIN");
    await other.query("SELECT 1 FROM trace WHERE id = $1 FOR UPDATE", [traceHeld!.id]);
    await other.query("SELECT 1 FROM span WHERE id = $1 FOR UPDATE", [spanHeld!.parent]);
    const batches = [batchOf(free!), batchOf(spanHeld!, [{ type: "end", spanId: spanHeld!.parent, status: "OK", at: new Date() }]), batchOf(traceHeld!)];
    const statement = writeBatchStatements(prisma, batches);
    const answered = await Promise.race([statement, new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), 5_000))]);
    // The run rows the statement locked are free again: the statement is over (before: it waited for the other transaction).
    const runLock = await other.query("SELECT 1 FROM run WHERE id = $1 FOR NO KEY UPDATE NOWAIT", [free!.id]).then(
      () => "free",
      (error: { code?: string }) => error.code,
    );
    await other.query("ROLLBACK");
    await other.end();
    await statement;
    expect(runLock).toBe("free");
    expect(answered === "waiting" ? answered : answered.map((changes) => changes?.map((change) => [change.seq, change.type]) ?? null)).toEqual([
      [[3, "SPAN_STARTED"]],
      null,
      null,
    ]);
  });
});
