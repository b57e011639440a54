// Caps that keep the work (issue 40), against a real HTTP server speaking the OpenAI protocol and
// reporting usage: each request writes a line of text and asks for a tool, costing exactly 1.005 USD
// at the test's price (50 input tokens at 100 USD/M, 10 output tokens at 100,000 USD/M). Before
// each request the run's spend plus the request's bound is held to its caps — the one last request
// of a CONCLUDE stop too.
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { toDecimal } from "../../src/domain/costs/pricing.js";
import { fromStored } from "../../src/domain/text/stored-text.js";
import { DEVELOPMENT_PRINCIPAL_ID } from "../../src/domain/principal/principal-service.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { type Body, PRICE, REQUEST_COST, startPricedServer } from "../support/priced-model-server.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("cost caps (%s)", (backend) => {
  let server: Server;
  let t: TestApp;
  const bodies: Body[] = [];
  // While set, the server holds each response until it resolves.
  let held: Promise<void> | null = null;
  const actor = { principalId: DEVELOPMENT_PRINCIPAL_ID };

  beforeAll(async () => {
    server = await startPricedServer(bodies, Number.POSITIVE_INFINITY, () => held ?? Promise.resolve());
    const { port } = server.address() as AddressInfo;
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: "priced-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-caps-")),
        // A request may write 10 tokens: its bound is 1 USD of output plus its input estimate.
        contextBudget: { reservedOutput: 10 },
        concurrency: 2,
      },
    });
    await t.app.db.prisma.modelPrice.create({ data: PRICE });
    await t.app.db.prisma.principal.upsert({
      where: { id: DEVELOPMENT_PRINCIPAL_ID },
      create: { id: DEVELOPMENT_PRINCIPAL_ID, name: "Development principal" },
      update: {},
    });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const settled = (runId: string) =>
    vi.waitFor(
      async () => {
        const run = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(["QUEUED", "RUNNING"]).not.toContain(run.status);
        return run;
      },
      { timeout: 30_000, interval: 100 },
    );
  const budgetEvents = (runId: string) => t.app.db.prisma.spanEvent.findMany({ where: { span: { traceId: runId }, kind: "BUDGET" }, orderBy: { seq: "asc" } });

  it("maxCost: stops before the request that could cross it, keeps the text so far, and the trace says which cap", async () => {
    const { run: admitted } = await t.app.services.admissions.admitRun(actor, { question: "Spend with care", limits: { maxTurns: 50, maxCost: "3" } });
    const run = await settled(admitted.id);
    const made = bodies.length;
    // Each request's bound is 1 USD of output plus its input estimate: at most two fit under 3.
    expect(made).toBeGreaterThanOrEqual(1);
    expect(made).toBeLessThanOrEqual(2);
    const text = Array.from({ length: made }, (_, i) => `Step ${i + 1}.`).join("\n\n");
    expect(run).toMatchObject({ status: "SUCCEEDED", stopReason: "BUDGET", answer: text, answerPartial: true });
    expect(toDecimal(run.cost).equals(REQUEST_COST.times(made))).toBe(true);
    const stop = (await budgetEvents(run.id)).map((event) => JSON.parse(fromStored(event.payload)) as Record<string, unknown>).find((payload) => payload.cap);
    expect(stop).toMatchObject({ cap: "MAX_COST", limit: "3", spent: REQUEST_COST.times(made).toString() });
    // Stopped before a request that could have crossed the cap, never after one that did.
    expect(toDecimal(String(stop!.spent)).plus(String(stop!.bound)).greaterThan(3)).toBe(true);
    expect(toDecimal(run.cost).lessThanOrEqualTo(3)).toBe(true);
    // The request went out asking for no more output than its bound counted.
    expect(bodies.at(-1)?.max_completion_tokens).toBe(10);
  });

  it("CONCLUDE: the one last request is held to the caps too; at its maxCost the run stops with BUDGET instead of spending past it", async () => {
    bodies.length = 0;
    let release = () => {};
    held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { run: admitted } = await t.app.services.admissions.admitRun(actor, { question: "Conclude with care", limits: { maxTurns: 50, maxCost: "2" } });
    // The first request is in flight: the run is asked to pause at its next safe point, then the request completes.
    await vi.waitFor(() => expect(bodies).toHaveLength(1), { timeout: 30_000, interval: 50 });
    await t.app.services.pauses.pauseRun(actor, admitted.id);
    held = null;
    release();
    await vi.waitFor(async () => expect((await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: admitted.id } })).status).toBe("PAUSED"), {
      timeout: 30_000,
      interval: 100,
    });
    // Paused at 1.005 USD of its 2: asked to CONCLUDE, then resumed, it would make one last request
    // whose bound (1 USD of output and its input) could take it past 2.
    await t.app.services.runs.cancelRun(actor, admitted.id, "CONCLUDE");
    await t.app.services.pauses.resumeRun(actor, admitted.id);
    const run = await settled(admitted.id);
    expect(bodies).toHaveLength(1);
    expect(run).toMatchObject({ status: "SUCCEEDED", stopReason: "BUDGET", answer: "Step 1.", answerPartial: true });
    expect(toDecimal(run.cost).equals(REQUEST_COST)).toBe(true);
    const stop = (await budgetEvents(run.id)).map((event) => JSON.parse(fromStored(event.payload)) as Record<string, unknown>).find((payload) => payload.cap);
    expect(stop).toMatchObject({ cap: "MAX_COST", limit: "2", spent: REQUEST_COST.toString() });
  });
});
