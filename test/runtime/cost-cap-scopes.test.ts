// Caps at every scope (issue 40), against a real HTTP server speaking the OpenAI protocol and
// reporting usage (1.005 USD a request): the principal's daily limit across two concurrent runs,
// a workspace's monthly budget, and confirmCostAbove approved (the run goes on to its answer) or
// rejected (BUDGET). Each test has a principal of its own, so their spends do not mix.
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { toDecimal } from "../../src/domain/costs/pricing.js";
import { fromStored } from "../../src/domain/text/stored-text.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { type Body, PRICE, REQUEST_COST, startPricedServer } from "../support/priced-model-server.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** The model answers at its fourth request of a run: a run that goes on past 3 USD answers. */
const ANSWER_AT = 4;

describe.each(backends)("cost caps by scope (%s)", (backend) => {
  let server: Server;
  let t: TestApp;
  const bodies: Body[] = [];

  beforeAll(async () => {
    server = await startPricedServer(bodies, ANSWER_AT);
    const { port } = server.address() as AddressInfo;
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: "priced-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-cap-scopes-")),
        contextBudget: { reservedOutput: 10 },
        concurrency: 2,
      },
    });
    await t.app.db.prisma.modelPrice.create({ data: PRICE });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const principal = async (name: string, dailyCostLimit: string | null = null) => {
    const created = await t.app.db.prisma.principal.create({ data: { name, dailyCostLimit } });
    return { principalId: created.id };
  };
  const admit = async (actor: { principalId: string }, input: Record<string, unknown>) =>
    (await t.app.services.admissions.admitRun(actor, { question: "Spend with care", ...input })).run.id;
  const settled = (runId: string) =>
    vi.waitFor(
      async () => {
        const run = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(["QUEUED", "RUNNING"]).not.toContain(run.status);
        return run;
      },
      { timeout: 40_000, interval: 100 },
    );
  const capStop = async (runId: string) => {
    const events = await t.app.db.prisma.spanEvent.findMany({ where: { span: { traceId: runId }, kind: "BUDGET" }, orderBy: { seq: "asc" } });
    return events.map((event) => JSON.parse(fromStored(event.payload)) as Record<string, string>).find((payload) => payload.cap);
  };

  it("DAILY_COST_LIMIT per principal: two concurrent runs overspend it by at most one request's bound between them", async () => {
    const actor = await principal("daily", "3");
    const ids = await Promise.all([admit(actor, { limits: { maxTurns: 50 } }), admit(actor, { limits: { maxTurns: 50 } })]);
    const runs = await Promise.all(ids.map(settled));
    for (const run of runs) expect(run).toMatchObject({ status: "SUCCEEDED", stopReason: "BUDGET" });
    // A run that got a reply keeps its text, marked partial; on a busy machine the second run may
    // start only once the first has spent the limit, and stop before its first request, with none.
    for (const run of runs) expect(run.answerPartial).toBe(Boolean(run.answer));
    expect(runs.some((run) => run.answerPartial)).toBe(true);
    const stops = await Promise.all(ids.map(capStop));
    for (const stop of stops) expect(stop).toMatchObject({ cap: "DAILY_COST_LIMIT", limit: "3" });
    const total = runs.reduce((sum, run) => sum.plus(toDecimal(run.cost)), toDecimal(0));
    const bound = stops.map((stop) => toDecimal(String(stop?.bound))).reduce((a, b) => (a.greaterThan(b) ? a : b));
    expect(total.greaterThan(0)).toBe(true);
    expect(total.lessThanOrEqualTo(toDecimal(3).plus(bound))).toBe(true);
  });

  it("Workspace.monthlyBudget set by its owner stops a workspace run with BUDGET, its text kept", async () => {
    const actor = await principal("monthly");
    const workspace = await t.app.services.workspaces.createWorkspace(actor, { title: "Budgeted", goal: "Spend little" });
    const set = await t.app.services.workspaces.setMonthlyBudget(actor, { workspaceId: workspace.id, monthlyBudget: "2" });
    expect(toDecimal(set.monthlyBudget!).equals(2)).toBe(true);
    await expect(t.app.services.workspaces.setMonthlyBudget(await principal("stranger"), { workspaceId: workspace.id, monthlyBudget: "9" })).rejects.toThrow();
    const run = await settled(await admit(actor, { workspaceId: workspace.id, limits: { maxTurns: 50 } }));
    expect(run).toMatchObject({ status: "SUCCEEDED", stopReason: "BUDGET", answer: "Step 1.", answerPartial: true });
    expect(toDecimal(run.cost).equals(REQUEST_COST)).toBe(true);
    expect(await capStop(run.id)).toMatchObject({ cap: "MONTHLY_BUDGET", limit: "2", spent: REQUEST_COST.toString() });
    // Cleared, the budget no longer applies.
    expect((await t.app.services.workspaces.setMonthlyBudget(actor, { workspaceId: workspace.id, monthlyBudget: null })).monthlyBudget).toBeNull();
  });

  const waitingOnCost = async (actor: { principalId: string }) => {
    const runId = await admit(actor, { limits: { maxTurns: 50, confirmCostAbove: "1.5" } });
    expect(await settled(runId)).toMatchObject({ status: "WAITING" });
    const request = await t.app.db.prisma.toolApproval.findFirstOrThrow({ where: { runId, kind: "COST_CONFIRMATION", decision: null } });
    return { runId, toolCallId: request.toolCallId };
  };

  it("confirmCostAbove: the run waits, is approved, and goes on to its answer", async () => {
    const actor = await principal("approves");
    const { runId, toolCallId } = await waitingOnCost(actor);
    await t.app.services.toolApprovals.decide(actor, { runId, toolCallId, decision: "APPROVE" });
    const run = await vi.waitFor(
      async () => {
        const current = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(current.status).toBe("SUCCEEDED");
        return current;
      },
      { timeout: 40_000, interval: 100 },
    );
    expect(run).toMatchObject({ stopReason: "ANSWERED", answer: `Answer ${ANSWER_AT}.` });
    expect(toDecimal(run.cost).equals(REQUEST_COST.times(ANSWER_AT))).toBe(true);
  });

  it("confirmCostAbove rejected: the run ends with BUDGET, its text kept", async () => {
    const actor = await principal("rejects");
    const { runId, toolCallId } = await waitingOnCost(actor);
    await t.app.services.toolApprovals.decide(actor, { runId, toolCallId, decision: "REJECT", reason: "too dear" });
    const run = await vi.waitFor(
      async () => {
        const current = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(current.status).toBe("SUCCEEDED");
        return current;
      },
      { timeout: 40_000, interval: 100 },
    );
    expect(run).toMatchObject({ stopReason: "BUDGET", answerPartial: true });
    expect(await capStop(runId)).toMatchObject({ cap: "CONFIRM_COST_ABOVE", limit: "1.5" });
  });
});
