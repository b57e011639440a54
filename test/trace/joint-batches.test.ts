// Attempts' fenced record batches share statements only when the worker already has several on
// their way (trace/record/joint-batches.ts): a batch asked for while fewer are goes at once, so one
// run's turn does not wait for another run's statement. A batch the joint statement did not write
// goes alone; a joint statement the database refused or cancelled (a lock or statement timeout
// one batch met) is sent again batch by batch; one whose link failed is not sent again.
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { IN_FLIGHT, writeBatchJointly } from "../../src/trace/record/joint-batches.js";
import { batchOf, claimedRuns } from "../support/claimed-runs.js";
import { backends } from "../support/databases.js";
import { closedAfterEach } from "../support/per-test.js";

const closing = closedAfterEach();
/** A statement of several attempts' batches (batch-statements.ts, writeBatchStatements). */
const JOINT = /\bbatch1_input AS \(/;
/** A statement of one attempt's batch alone. */
const ALONE = /\bbatch_input AS \(/;

type Gate = { release: () => void; passed: Promise<void> };

/**
 * The app's client as the line sees it: every statement it sends is recorded; a statement
 * matching a `hold` waits until released; one matching a `fail` is answered with that error.
 */
function watched(prisma: PrismaClient) {
  const sent: string[] = [];
  const holds: { pattern: RegExp; gate: Gate }[] = [];
  const fails: { pattern: RegExp; error: Error }[] = [];
  const db = new Proxy(prisma, {
    get(target, property) {
      if (property !== "$queryRawUnsafe") return Reflect.get(target, property, target) as unknown;
      return async (sql: string, ...params: unknown[]) => {
        sent.push(sql);
        const fail = fails.findIndex(({ pattern }) => pattern.test(sql));
        if (fail >= 0) throw fails.splice(fail, 1)[0]!.error;
        const hold = holds.findIndex(({ pattern }) => pattern.test(sql));
        if (hold >= 0) await holds.splice(hold, 1)[0]!.gate.passed;
        return target.$queryRawUnsafe(sql, ...params);
      };
    },
  });
  const hold = (pattern: RegExp): Gate => {
    let release: () => void = () => undefined;
    const passed = new Promise<void>((resolve) => (release = resolve));
    const gate = { release, passed };
    holds.push({ pattern, gate });
    return gate;
  };
  const fail = (pattern: RegExp, error: Error) => fails.push({ pattern, error });
  return { db, sent, hold, fail };
}

async function claimedBatches(backend: (typeof backends)[number], count: number) {
  const { prisma, url, runs } = await claimedRuns(backend, count, closing);
  return { prisma, url, batches: runs.map((run) => batchOf(run)) };
}

const seqs = (changes: { seq: number; type: string }[] | null) => changes?.map((change) => [change.seq, change.type]) ?? null;

describe.each(backends)("attempts' record batches on %s", (backend) => {
  it("go at once while fewer than IN_FLIGHT statements are on their way, and gather only past that", async () => {
    const { prisma, batches } = await claimedBatches(backend, IN_FLIGHT + 2);
    const { db, sent, hold } = watched(prisma);
    // A first statement held on its way (a large batch, say): the next batch is sent at once, alone, not kept for it.
    const gates = batches.slice(0, IN_FLIGHT).map(() => hold(ALONE));
    const written = [writeBatchJointly(db, batches[0]!, 3_000_000)];
    written.push(writeBatchJointly(db, batches[1]!, 10));
    expect(sent.filter((sql) => ALONE.test(sql))).toHaveLength(2);
    // With IN_FLIGHT on their way, the next ones wait and then go together, in one statement.
    for (const batch of batches.slice(2)) written.push(writeBatchJointly(db, batch, 10));
    expect(sent).toHaveLength(IN_FLIGHT);
    for (const gate of gates) gate.release();
    const changes = await Promise.all(written);
    expect(changes.map(seqs)).toEqual(batches.map(() => [[3, "SPAN_STARTED"]]));
    expect(sent.filter((sql) => JOINT.test(sql))).toHaveLength(1);
    expect(sent).toHaveLength(IN_FLIGHT + 1);
  });

  const answers = {
    refused: Object.assign(new Error("statement too complex"), { code: "54001" }),
    cancelled: Object.assign(new Error("canceling statement due to lock timeout"), { code: "55P03" }),
    "cut off": new Error("Connection terminated unexpectedly"),
  };
  it.each(Object.keys(answers) as (keyof typeof answers)[])(
    "a joint statement %s by the database: each batch alone, unless its link failed",
    async (answer) => {
      const { prisma, batches } = await claimedBatches(backend, IN_FLIGHT + 2);
      const { db, sent, hold, fail } = watched(prisma);
      const gates = batches.slice(0, IN_FLIGHT).map(() => hold(ALONE));
      const first = batches.slice(0, IN_FLIGHT).map((batch) => writeBatchJointly(db, batch, 10));
      fail(JOINT, answers[answer]);
      const joined = Promise.allSettled(batches.slice(IN_FLIGHT).map((batch) => writeBatchJointly(db, batch, 10)));
      for (const gate of gates) gate.release();
      await Promise.all(first);
      const settled = await joined;
      expect(sent.filter((sql) => JOINT.test(sql))).toHaveLength(1);
      const turns = await prisma.span.count({ where: { traceId: { in: batches.slice(IN_FLIGHT).map((batch) => batch.traceId) }, kind: "TURN" } });
      if (answer === "cut off") {
        // Whether it committed is unknown: neither batch is sent again (no record written twice).
        expect(settled.map((result) => result.status)).toEqual(["rejected", "rejected"]);
        expect(sent.filter((sql) => ALONE.test(sql))).toHaveLength(IN_FLIGHT);
        expect(turns).toBe(0);
      } else {
        // It wrote nothing: each batch is written alone (a timeout one batch met rejected both, before).
        expect(settled.map((result) => (result.status === "fulfilled" ? seqs(result.value) : result.status))).toEqual([
          [[3, "SPAN_STARTED"]],
          [[3, "SPAN_STARTED"]],
        ]);
        expect(sent.filter((sql) => ALONE.test(sql))).toHaveLength(IN_FLIGHT + 2);
        expect(turns).toBe(2);
      }
    },
  );

  it("a batch the joint statement skipped (its trace row held elsewhere; its attempt's run lost) goes alone, holding nobody up", async () => {
    const { prisma, url, batches } = await claimedBatches(backend, IN_FLIGHT + 3);
    const { db, sent, hold } = watched(prisma);
    const [kept, held, lost] = batches.slice(IN_FLIGHT);
    await prisma.$executeRawUnsafe("UPDATE run SET lease_owner = 'worker-2' WHERE id = $1", lost!.guard.runId);
    // Another transaction holds the trace row of one batch (PostgreSQL: a retention sweep, say).
    const other = backend === "postgres" ? new pg.Client({ connectionString: url }) : undefined;
    await other?.connect();
    await other?.query("BEGIN");
    await other?.query("SELECT 1 FROM trace WHERE id = $1 FOR UPDATE", [held!.traceId]);
    const gates = batches.slice(0, IN_FLIGHT).map(() => hold(ALONE));
    const first = batches.slice(0, IN_FLIGHT).map((batch) => writeBatchJointly(db, batch, 10));
    const joined = [kept, held, lost].map((batch) => writeBatchJointly(db, batch!, 10));
    for (const gate of gates) gate.release();
    await Promise.all(first);
    // The others' batches are written while that row is held (before: the joint statement waited for it).
    expect(seqs(await joined[0]!)).toEqual([[3, "SPAN_STARTED"]]);
    expect(seqs(await joined[2]!)).toEqual(null);
    await other?.query("COMMIT");
    await other?.end();
    expect(seqs(await joined[1]!)).toEqual([[3, "SPAN_STARTED"]]);
    expect(sent.filter((sql) => JOINT.test(sql))).toHaveLength(1);
    // The skipped batches were checked again alone (the held one on PostgreSQL, the lost one everywhere).
    expect(sent.filter((sql) => ALONE.test(sql))).toHaveLength(IN_FLIGHT + (backend === "postgres" ? 2 : 1));
  });
});
