// A run that did not fail ends in one statement (settle-statement.ts) whenever nothing else is left
// to decide; otherwise the settle row of transitions.ts writes it statement by statement
// (apply-transition.ts). Both write the same end, and must keep writing the same end: the same
// run settled each way leaves the same rows — the run, its attempt, its spans and trace, the trace
// changes a viewer replays, its steering inputs and spills released, its conversation's slot, its
// publication's outcome and the webhook message its owner receives, byte for byte. A settle step
// that cannot say what it writes in the statement (here: one that writes nothing) makes the
// settle take the statements one by one, as any such step would.
import { afterEach, describe, expect, it } from "vitest";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { AttemptFencedError, PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import type { Outcome, SettleStep } from "../../src/domain/runs/vocabulary.js";
import { createEventBus } from "../../src/events/topics.js";
import { PrismaSpillStore } from "../../src/runtime/adapters/prisma-spill-store.js";
import { settleStepsOf } from "../../src/runtime/runtime.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { SETTLE_CLAIMANT } from "../support/settle-claimant.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const BUDGET = { cap: "RUN", limit: "0.01", spent: "0.0123", bound: "0.01" } as never;

/** The ends a settle writes in one statement, and the runs they end. */
const CASES: { name: string; inWorkspace: boolean; outcome: Outcome; status: string; publication: string }[] = [
  {
    name: "an answer, no workspace",
    inWorkspace: false,
    outcome: { type: "final", answer: "The week is planned." },
    status: "SUCCEEDED",
    publication: "NO_WORKSPACE",
  },
  { name: "an empty answer in a workspace", inWorkspace: true, outcome: { type: "final", answer: "  " }, status: "SUCCEEDED", publication: "EMPTY_ANSWER" },
  {
    name: "an invisible answer in a workspace",
    inWorkspace: true,
    outcome: { type: "final", answer: "\u200b\u200b" },
    status: "SUCCEEDED",
    publication: "NO_VISIBLE_CHARACTERS",
  },
  {
    name: "a concluded answer",
    inWorkspace: false,
    outcome: { type: "final", answer: "Concluded: «done».", concluded: true },
    status: "SUCCEEDED",
    publication: "NO_WORKSPACE",
  },
  {
    name: "a budget stop with text",
    inWorkspace: false,
    outcome: { type: "final", answer: 'So far "this"', budget: BUDGET },
    status: "SUCCEEDED",
    publication: "NO_WORKSPACE",
  },
  {
    name: "a budget stop without text",
    inWorkspace: false,
    outcome: { type: "final", answer: "", budget: BUDGET },
    status: "SUCCEEDED",
    publication: "NO_WORKSPACE",
  },
  {
    name: "a stop after the turn",
    inWorkspace: true,
    outcome: { type: "interrupted", status: "CANCELLED", afterTurn: true },
    status: "CANCELLED",
    publication: "NOT_SUCCEEDED",
  },
  { name: "a timed-out run", inWorkspace: false, outcome: { type: "interrupted", status: "TIMED_OUT" }, status: "TIMED_OUT", publication: "NO_WORKSPACE" },
  { name: "a cancelled run", inWorkspace: true, outcome: { type: "interrupted", status: "CANCELLED" }, status: "CANCELLED", publication: "NOT_SUCCEEDED" },
];

const CLAIMANT = SETTLE_CLAIMANT;

/** Replaces what differs between two runs settled alike (ids, times) by names given in order of first sight. */
function normaliser(ids: Record<string, string>) {
  const times = new Map<number, string>();
  const timeOf = (ms: number) => times.get(ms) ?? (times.set(ms, `<t${times.size}>`), `<t${times.size - 1}>`);
  const known = Object.entries(ids).sort(([a], [b]) => b.length - a.length);
  const text = (value: string) => {
    let out = value.replace(/msg_[0-9a-f]{32}/g, "<event>");
    for (const [id, name] of known) out = out.replaceAll(id, name);
    return out.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, (iso) => timeOf(Date.parse(iso)));
  };
  const norm = (value: unknown): unknown => {
    if (value instanceof Date) return timeOf(value.getTime());
    if (typeof value === "string") return text(value);
    if (Array.isArray(value)) return value.map(norm);
    if (value && typeof value === "object") {
      if (value.constructor?.name === "Decimal") return `decimal ${String(value)}`;
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, norm(inner)]));
    }
    return value;
  };
  return norm;
}

async function settleOnce(app: TestApp, workspaceId: string | undefined, outcome: Outcome, stepByStep: boolean) {
  const prisma = app.app.db.prisma;
  const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
  const { run } = await admit(app.client, { question: "Plan the week.", ...(workspaceId ? { workspaceId } : {}) });
  const runId = dbId(run.id);
  const claimed = await runs.claim(CLAIMANT, runId);
  if (!claimed) throw new Error("the run was not claimed");
  // What the end releases and reports: a pending steering input, a spill, the run's cost so far.
  await prisma.runInput.create({ data: { runId, text: "also the weekend" } });
  const conversationId = claimed.run.conversationId;
  const message = await prisma.message.create({ data: { conversationId, seq: 900, role: "TOOL", content: "big", runId } });
  await prisma.spill.create({
    data: {
      handle: `spill://${runId}`,
      runId,
      conversationId,
      messageId: message.id,
      toolCallId: "c1",
      toolName: "t",
      sizeBytes: 3,
      sizeChars: 3,
      preview: "b",
      strategy: "head",
      itemStarts: [0, 2],
    },
  });
  await prisma.run.update({ where: { id: runId }, data: { cost: "0.0123400000", costUnpriced: true } });
  await prisma.span.update({ where: { id: claimed.span.id }, data: { cost: "0.0100000000", usage: { inputTokens: 12, outputTokens: 3 } } });

  const calls: string[] = [];
  // The runtime's settle steps, as they are, each noting that it ran as a step of its own.
  const steps: SettleStep[] = settleStepsOf(app.app.services, new PrismaSpillStore(prisma)).map((step, i) =>
    Object.assign(async (context: Parameters<SettleStep>[0]) => void (calls.push(`step ${i}`), await step(context)), { inStatement: step.inStatement }),
  );
  if (stepByStep) steps.push(async () => void calls.push("without a statement of its own"));
  const fence = new PrismaAttemptFence(prisma, { runId, attempt: claimed.number, workerId: CLAIMANT.workerId }, () => undefined);
  const status = await runs.settle(claimed, fence, outcome, steps);

  const runRow = await prisma.run.findUniqueOrThrow({
    where: { id: runId },
    select: {
      status: true,
      stopReason: true,
      answer: true,
      answerPartial: true,
      concludedEarly: true,
      failureReason: true,
      finishedAt: true,
      leaseOwner: true,
      leaseExpiresAt: true,
      attempt: true,
      cost: true,
      costUnpriced: true,
    },
  });
  const snapshot = {
    status,
    run: runRow,
    attempts: await prisma.runAttempt.findMany({ where: { runId }, select: { number: true, endedAt: true, outcome: true }, orderBy: { number: "asc" } }),
    spans: await prisma.span.findMany({
      where: { traceId: claimed.root.traceId },
      select: { id: true, kind: true, status: true, endedAt: true, cost: true, costUnpriced: true, usage: true, attributes: true },
      orderBy: { kind: "asc" },
    }),
    trace: await prisma.trace.findUniqueOrThrow({ where: { id: claimed.root.traceId }, select: { endedAt: true, lastSeq: true, records: true } }),
    changes: await prisma.traceChange.findMany({
      where: { traceId: claimed.root.traceId },
      select: { seq: true, type: true, spanId: true, eventId: true, spanAfter: true, at: true },
      orderBy: { seq: "asc" },
    }),
    inputs: await prisma.runInput.findMany({ where: { runId }, select: { status: true, releasedAt: true } }),
    spills: await prisma.spill.findMany({ where: { runId }, select: { releasedAt: true, itemStarts: true } }),
    conversation: await prisma.conversation.findUniqueOrThrow({ where: { id: conversationId }, select: { activeRunId: true } }),
    publication: await prisma.runPublication.findUnique({ where: { runId }, select: { outcome: true, reason: true, publicationVersionId: true } }),
    webhooks: await prisma.webhookMessage.findMany({
      where: { body: { contains: run.id } },
      select: { eventId: true, type: true, body: true, status: true, attempts: true },
    }),
  };
  const norm = normaliser({
    [run.id]: "<Run>",
    [encodeGlobalId("Conversation", conversationId)]: "<Conversation>",
    ...(workspaceId ? { [workspaceId]: "<Workspace>", [dbId(workspaceId)]: "<workspace>" } : {}),
    [runId]: "<run>",
    [conversationId]: "<conversation>",
    [claimed.root.id]: "<root span>",
    [claimed.span.id]: "<attempt span>",
    [claimed.root.traceId]: "<trace>",
  });
  return { calls, snapshot: norm(snapshot) as typeof snapshot };
}

describe.each(backends)("a run's end in one statement and statement by statement, on %s", (backend) => {
  it("writes the same rows, and the same webhook body byte for byte", async () => {
    t = await startTestApp(backend);
    const app = t;
    const prisma = app.app.db.prisma;
    const workspace = await createWorkspace(app.client);
    const { run } = await admit(app.client, { question: "Who am I?" });
    const { ownerId } = await prisma.run.findUniqueOrThrow({ where: { id: dbId(run.id) }, select: { ownerId: true } });
    await prisma.webhook.create({
      data: { ownerId, url: "https://hooks.example.com/", events: ["RUN_SUCCEEDED", "RUN_CANCELLED", "RUN_TIMED_OUT"], secret: "sealed" },
    });
    for (const { name, inWorkspace, outcome, status, publication } of CASES) {
      const workspaceId = inWorkspace ? workspace.id : undefined;
      const one = await settleOnce(app, workspaceId, outcome, false);
      const many = await settleOnce(app, workspaceId, outcome, true);
      // The first took the one statement (no step ran on its own), the second every step.
      expect(one.calls, name).toEqual([]);
      expect(many.calls, name).toEqual(["step 0", "step 1", "step 2", "without a statement of its own"]);
      expect(one.snapshot.status, name).toBe(status);
      expect(one.snapshot.publication?.outcome, name).toBe(publication);
      expect(
        one.snapshot.inputs.map((input) => input.status),
        name,
      ).toEqual(["RELEASED"]);
      expect(one.snapshot.spills[0]?.releasedAt, name).toBe(one.snapshot.run.finishedAt);
      expect(one.snapshot.webhooks, name).toHaveLength(1);
      expect(one.snapshot, name).toEqual(many.snapshot);
      // Byte for byte: the same text, key order and number formatting included.
      expect(one.snapshot.webhooks[0]!.body, name).toBe(many.snapshot.webhooks[0]!.body);
    }
  });

  it("writes nothing for an attempt that lost its run, and says so", async () => {
    t = await startTestApp(backend);
    const prisma = t.app.db.prisma;
    const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    const { run } = await admit(t.client, { question: "Plan the week." });
    const runId = dbId(run.id);
    const claimed = await runs.claim(CLAIMANT, runId);
    if (!claimed) throw new Error("the run was not claimed");
    // Another worker took the run over meanwhile.
    await prisma.run.update({ where: { id: runId }, data: { attempt: claimed.number + 1, leaseOwner: "worker-2" } });
    const lost: string[] = [];
    const fence = new PrismaAttemptFence(prisma, { runId, attempt: claimed.number, workerId: CLAIMANT.workerId }, (reason) => lost.push(reason));
    const steps = settleStepsOf(t.app.services, new PrismaSpillStore(prisma));
    await expect(runs.settle(claimed, fence, { type: "final", answer: "Too late." }, steps)).rejects.toBeInstanceOf(AttemptFencedError);
    expect(lost).toEqual(["LEASE_LOST"]);
    const after = await prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, answer: true, finishedAt: true, leaseOwner: true } });
    expect(after).toEqual({ status: "RUNNING", answer: null, finishedAt: null, leaseOwner: "worker-2" });
    expect(await prisma.trace.findUniqueOrThrow({ where: { id: claimed.root.traceId }, select: { endedAt: true } })).toEqual({ endedAt: null });
    expect(await prisma.span.count({ where: { traceId: claimed.root.traceId, status: { not: "RUNNING" } } })).toBe(0);
    expect(await prisma.runPublication.count({ where: { runId } })).toBe(0);
  });
});
