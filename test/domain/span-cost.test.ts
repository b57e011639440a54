// A model call is priced when its span ends (issue 40): from its own usage, at the price its
// run's owner pays for the requested model at the end time — the owner's own entry wins over the
// operator's, the latest effective one among them — and the run's cost grows in the same
// transaction, so Run.cost is exactly the sum of its spans' own cost. A model without a price
// says so instead of counting zero.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import type { Database } from "../../src/db/open-database.js";
import { priceAt } from "../../src/domain/costs/price-book.js";
import { toDecimal } from "../../src/domain/costs/pricing.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

const usage = { input: 12_000, cached: 10_000, output: 3_000, reasoning: 2_000 };
const at = (iso: string) => new Date(iso);

describe.each(backends)("model call cost on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  let clock = at("2026-06-01T00:00:00Z");
  let recorder: PrismaTraceRecorder;
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend));
    recorder = new PrismaTraceRecorder({ prisma: db.prisma, events: createEventBus(), now: () => clock });
  });
  afterAll(async () => dispose?.());

  async function newRun(): Promise<{ ownerId: string; runId: string; traceId: string }> {
    const run = await createBareRun(db.prisma);
    return { ...run, traceId: await recorder.traceFor(run.runId) };
  }

  async function modelCall(traceId: string, model: string, endAt: string) {
    const span = await recorder.startSpan({ traceId, kind: "MODEL_CALL", name: `chat ${model}`, attributes: { "gen_ai.request.model": model } });
    clock = at(endAt);
    await recorder.endSpan(span, { status: "OK", usage, attributes: { finishReason: "stop" } });
    return db.prisma.span.findUniqueOrThrow({ where: { id: span.id } });
  }

  it("prices each call at its own end: a price change effective mid-run prices the later calls anew", async () => {
    const model = `gpt-mid-${backend}`;
    await db.prisma.modelPrice.createMany({
      data: [
        { model, effectiveFrom: at("2026-01-01T00:00:00Z"), inputPerMillion: "2.50", cachedInputPerMillion: "1.25", outputPerMillion: "10" },
        { model, effectiveFrom: at("2026-06-01T12:00:00Z"), inputPerMillion: "5", outputPerMillion: "20", reasoningPerMillion: "40" },
      ],
    });
    const { runId, traceId } = await newRun();
    const before = await modelCall(traceId, model, "2026-06-01T11:59:59.999Z");
    const after = await modelCall(traceId, model, "2026-06-01T12:00:00Z");
    // 2,000 × 2.50 + 10,000 × 1.25 + 3,000 × 10 = 47,500 per million.
    expect(before.cost?.toFixed()).toBe("0.0475");
    // 12,000 × 5 (no cached price: the input price) + 1,000 × 20 + 2,000 × 40 = 160,000 per million.
    expect(after.cost?.toFixed()).toBe("0.16");
    expect([before.costUnpriced, after.costUnpriced]).toEqual([false, false]);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.cost.toFixed()).toBe("0.2075");
    expect(run.costUnpriced).toBe(false);
  });

  it("prefers the owner's own entry over the operator's, and marks a call without a price unpriced", async () => {
    const model = `own-${backend}`;
    const { ownerId, runId, traceId } = await newRun();
    await db.prisma.modelPrice.createMany({
      data: [
        { model, effectiveFrom: at("2026-03-01T00:00:00Z"), inputPerMillion: "100", outputPerMillion: "100" },
        { principalId: ownerId, model, effectiveFrom: at("2026-01-01T00:00:00Z"), inputPerMillion: "1", outputPerMillion: "2" },
      ],
    });
    expect((await priceAt(db.prisma, { principalId: ownerId, model, at: at("2026-06-01T00:00:00Z") }))?.principalId).toBe(ownerId);
    expect((await priceAt(db.prisma, { principalId: null, model, at: at("2026-06-01T00:00:00Z") }))?.principalId).toBeNull();
    expect(await priceAt(db.prisma, { principalId: ownerId, model, at: at("2025-12-31T00:00:00Z") })).toBeNull();

    const own = await modelCall(traceId, model, "2026-06-01T00:00:00Z");
    // 12,000 × 1 + 3,000 × 2 = 18,000 per million.
    expect(own.cost?.toFixed()).toBe("0.018");
    const unpriced = await modelCall(traceId, `no-price-${backend}`, "2026-06-01T00:00:01Z");
    expect(unpriced.cost).toBeNull();
    expect(unpriced.costUnpriced).toBe(true);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.cost.toFixed()).toBe("0.018");
    expect(run.costUnpriced).toBe(true);
    const spans = await db.prisma.span.findMany({ where: { traceId } });
    expect(spans.reduce((sum, span) => sum.plus(toDecimal(span.cost ?? 0)), toDecimal(0)).equals(toDecimal(run.cost))).toBe(true);
  });

  it("keeps one operator entry per model and time (no principal is not distinct)", async () => {
    const entry = { model: `unique-${backend}`, effectiveFrom: at("2026-01-01T00:00:00Z"), inputPerMillion: "1", outputPerMillion: "1" };
    await db.prisma.modelPrice.create({ data: entry });
    await expect(db.prisma.modelPrice.create({ data: entry })).rejects.toThrow();
  });
});
