// A run read with its trace shows one moment, on every backend: a run that settles while a read
// of it is under way answers either RUNNING with a trace that has not ended, or settled with a
// trace that has — never RUNNING with an ended trace (Trace.endedAt), nor an ended trace without
// its retention clock (Trace.expiresAt) agreeing. The read is held right after the run's row was
// read, until the run has settled, so the settle always falls in the middle of the read.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse } from "graphql";
import { createClient, type DossierClient, type RunTrace } from "../../sdk/client.js";
import { DecideToolCallDocument, PauseRunDocument, ResumeRunDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { afterEach, describe, expect, it } from "vitest";
import { decodeGlobalId } from "../../src/graphql/global-id.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil, withTimeout } from "../support/wait.js";

/** A tool that runs until the test lets it finish. */
function gatedTool(name = "slow_read"): { tool: Tool; started: Promise<void>; finish(): void } {
  let started!: () => void;
  let finish!: () => void;
  const startedPromise = new Promise<void>((resolve) => (started = resolve));
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const tool: Tool = {
    schema: { name, description: "reads slowly", parameters: { type: "object" } },
    execute: async () => {
      started();
      await finished;
      return "slow result";
    },
  };
  return { tool, started: startedPromise, finish };
}

type TraceView = { __typename: "Trace"; endedAt: string | null; expiresAt: string | null; lastSeq: string };
type RunView = { __typename: "Run"; status: string; finishedAt: string | null; trace: TraceView | { __typename: "TraceExpiredError" } | null };

/** What a client reads to tell whether a run and its trace have ended. */
const RUN_AND_TRACE = parse(
  "query RunAndTrace($id: ID!) { node(id: $id) { __typename ... on Run { status finishedAt trace { __typename ... on Trace { endedAt expiresAt lastSeq } } } } }",
) as TypedDocumentNode<{ node: RunView | { __typename: string } | null }, { id: string }>;

const RUN_READS = new Set(["findUnique", "findUniqueOrThrow", "findFirst", "findFirstOrThrow", "findMany"]);

/**
 * `prisma` whose reads of runs call `afterRunRead` once they have their rows, and give those rows
 * only once it resolved: what the request reads after a run's row then sees what happened meanwhile.
 */
function holdingRunReads(prisma: PrismaClient, afterRunRead: () => Promise<void>): PrismaClient {
  const runs = new Proxy(prisma.run, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      const read = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      if (!RUN_READS.has(String(prop))) return read;
      return async (...args: unknown[]) => {
        const rows = await read(...args);
        await afterRunRead();
        return rows;
      };
    },
  });
  return new Proxy(prisma, {
    get(target, prop) {
      if (prop === "run") return runs;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe.each(backends)("a run read with its trace on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("a run that settles in the middle of the read shows RUNNING with a trace not ended, or settled with an ended one", async () => {
    const opened = await openMigratedTestDatabase(backend);
    const { db } = opened;
    const slow = gatedTool();
    t = await startTestApp(backend, {
      database: async () => opened,
      // A retention policy gives an ended trace an expiry: Trace.expiresAt is null only while it runs.
      retention: { days: 30, mode: "DELETE" },
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-trace-moment-")),
        extraTools: [slow.tool],
        concurrency: 1,
        leaseMs: 10_000,
      },
    });
    const { run } = await admit(t.client, { question: callTools({ name: "slow_read" }) });
    await withTimeout(slow.started, 20_000);

    const runId = decodeGlobalId(run.id)!.id;
    // From here on the API's reads of runs wait, once, for the run to settle.
    const prisma = db.prisma;
    let held = 0;
    db.prisma = holdingRunReads(prisma, async () => {
      if (held++ > 0) return;
      slow.finish();
      await waitUntil(async () => {
        const row = await prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, trace: { select: { endedAt: true } } } });
        return row.status === "SUCCEEDED" && row.trace?.endedAt ? row : undefined;
      }, 20_000);
    });
    const read = await t.client.request(RUN_AND_TRACE, { id: run.id });
    db.prisma = prisma;
    expect(held).toBeGreaterThan(0);
    const view = read.node as RunView;
    const trace = view.trace as TraceView;
    const seen = { status: view.status, finishedAt: view.finishedAt, endedAt: trace.endedAt, expires: trace.expiresAt !== null };
    expect([
      { status: "RUNNING", finishedAt: null, endedAt: null, expires: false },
      { status: "SUCCEEDED", finishedAt: trace.endedAt, endedAt: expect.any(String), expires: true },
    ]).toContainEqual(seen);

    // The same read once the run settled: settled, its trace ended when it finished.
    const after = (await t.client.runTrace(run.id))!;
    expect({ status: after.status, endedAt: after.trace!.endedAt }).toEqual({ status: "SUCCEEDED", endedAt: after.finishedAt });
  });
});

const writeTool: Tool = {
  schema: { name: "write_report", description: "writes a report", parameters: { type: "object" } },
  execute: async () => "report written",
};

/** How a run and its trace read in one request (client.runTrace): what says whether either has ended. */
async function endsOf(client: DossierClient, runId: string) {
  const view = (await client.runTrace(runId)) as RunTrace;
  const spans = view.trace?.spans ?? [];
  return {
    status: view.status,
    finishedAt: view.finishedAt,
    traceEndedAt: view.trace ? view.trace.endedAt : "no trace",
    run: spans.filter((s) => s.kind === "RUN").map((s) => [s.status, s.endedAt === null ? "open" : "ended"]),
    attempts: spans.filter((s) => s.kind === "ATTEMPT").map((s) => [s.status, s.endedAt === null ? "open" : "ended"]),
  };
}

describe.each(backends)("a run's trace through every state on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("has not ended while the run is QUEUED, RUNNING, PAUSED, RUNNING again or WAITING; it ends once, when the run settles", async () => {
    const slow = gatedTool();
    const blocker = gatedTool("hold_worker");
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-trace-states-")),
        extraTools: [slow.tool, blocker.tool, writeTool],
        concurrency: 1,
        leaseMs: 10_000,
        sweepMs: 100,
        approvals: { rules: { write_report: "always" } },
      },
    });
    const { client } = t;
    // The one worker slot is held: the run waits QUEUED, with no trace yet.
    const { run: first } = await admit(client, { question: callTools({ name: "hold_worker" }) });
    await withTimeout(blocker.started, 20_000);
    const { run } = await admit(client, { question: callToolsInTurns([{ name: "slow_read" }], [{ name: "write_report" }]) });
    expect(await endsOf(client, run.id)).toEqual({ status: "QUEUED", finishedAt: null, traceEndedAt: "no trace", run: [], attempts: [] });
    blocker.finish();
    expect((await settled(client, first.id)).status).toBe("SUCCEEDED");

    // RUNNING, in its first tool call.
    await withTimeout(slow.started, 20_000);
    const open = ["RUNNING", "open"];
    expect(await endsOf(client, run.id)).toEqual({ status: "RUNNING", finishedAt: null, traceEndedAt: null, run: [open], attempts: [open] });

    // PAUSED after that call: its attempt ended, the run's span and its trace did not.
    expectType((await client.request(PauseRunDocument, { input: { runId: run.id } })).pauseRun, "PauseRunSuccess");
    slow.finish();
    const paused = await waitUntil(async () => {
      const ends = await endsOf(client, run.id);
      return ends.status === "PAUSED" ? ends : undefined;
    }, 20_000);
    expect(paused).toEqual({ status: "PAUSED", finishedAt: null, traceEndedAt: null, run: [open], attempts: [["INTERRUPTED", "ended"]] });

    // Resumed, it runs again and then WAITING for a decision on its next call: a second attempt, ended OK.
    expectType((await client.request(ResumeRunDocument, { input: { runId: run.id } })).resumeRun, "ResumeRunSuccess");
    const waiting = await waitUntil(async () => {
      const ends = await endsOf(client, run.id);
      return ends.status === "WAITING" ? ends : undefined;
    }, 20_000);
    expect(waiting).toEqual({
      status: "WAITING",
      finishedAt: null,
      traceEndedAt: null,
      run: [open],
      attempts: [
        ["INTERRUPTED", "ended"],
        ["OK", "ended"],
      ],
    });

    // Approved, it runs a third attempt and settles: only now the trace ends, when the run finished.
    const [approval] = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run").pendingApprovals.edges;
    const decision = { runId: run.id, toolCallId: approval!.node.toolCallId, decision: "APPROVE" as const };
    expectType((await client.request(DecideToolCallDocument, { input: decision })).decideToolCall, "DecideToolCallSuccess");
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    const done = await endsOf(client, run.id);
    expect(done).toEqual({
      status: "SUCCEEDED",
      finishedAt: expect.any(String),
      traceEndedAt: done.finishedAt,
      run: [["OK", "ended"]],
      attempts: [
        ["INTERRUPTED", "ended"],
        ["OK", "ended"],
        ["OK", "ended"],
      ],
    });

    // The live stream says so once, last, at the trace's last position.
    const app = t.app;
    const sse = createClient({
      url: "http://dossier.test/graphql",
      fetch: (async (input: string, init?: RequestInit) => app.yoga.fetch(new Request(input, init))) as typeof fetch,
      subscriptions: "sse",
    });
    const kinds: string[] = [];
    let lastSeq = "";
    for await (const update of sse.traceUpdates(run.id)) {
      kinds.push(update.kind);
      lastSeq = update.seq;
    }
    expect(kinds.filter((kind) => kind === "TRACE_ENDED")).toHaveLength(1);
    expect(kinds.at(-1)).toBe("TRACE_ENDED");
    expect(lastSeq).toBe((await client.runTrace(run.id))!.trace!.lastSeq);
    await sse.close();
  });
});
