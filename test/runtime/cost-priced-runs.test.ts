// What runs cost, end to end (issue 40): runs against a real HTTP server speaking the OpenAI
// protocol that reports usage WITH cached and reasoning tokens, priced by an operator entry of the
// price table. Every model span's cost, Run.cost, Trace.cost, Workspace.cost and Principal.cost(since)
// equal hand-computed decimals exactly — cached tokens are part of input, reasoning part of output.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { toDecimal } from "../../src/domain/costs/pricing.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { DEVELOPMENT_PRINCIPAL_ID } from "../../src/domain/principal/principal-service.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { CreateWebhookDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

const MODEL = "cached-reasoning-model";
// Each request reports 1234 input tokens (567 of them cached) and 89 output tokens (21 of them reasoning).
const USAGE = {
  prompt_tokens: 1234,
  completion_tokens: 89,
  total_tokens: 1323,
  prompt_tokens_details: { cached_tokens: 567 },
  completion_tokens_details: { reasoning_tokens: 21 },
};
const PRICE = {
  model: MODEL,
  effectiveFrom: new Date("2020-01-01T00:00:00Z"),
  inputPerMillion: "3.3",
  cachedInputPerMillion: "0.33",
  outputPerMillion: "15.7",
  reasoningPerMillion: "7.1",
};
// By hand: (667 × 3.3 + 567 × 0.33 + 68 × 15.7 + 21 × 7.1) / 1e6 = (2201.1 + 187.11 + 1067.6 + 149.1) / 1e6.
const CALL_COST = "0.00360491";
// Charging cached on top of input and reasoning on top of output would have given 0.00675224 instead.

const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** First request: one task_list call; every later one: the final answer. Every response reports USAGE. */
async function startUsageServer(): Promise<Server> {
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { messages: { role: string }[] };
    const first = !body.messages.some((m) => m.role === "tool");
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (first) {
      const args = JSON.stringify({ action: "add", title: "look it up" });
      res.write(
        frame(
          { role: "assistant", tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "task_list", arguments: args } }] },
          "tool_calls",
        ),
      );
    } else {
      res.write(frame({ role: "assistant", content: "Priced answer." }, "stop"));
    }
    res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: MODEL, choices: [], usage: USAGE })}\n\n`);
    res.end("data: [DONE]\n\n");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

const RUN = parse(`query ($id: ID!) {
  run(id: $id) {
    status cost { amount currency }
    trace { ... on Trace { cost { amount currency } spans(first: 100) { edges { node { kind cost { amount currency } costUnpriced cumulativeCost { amount } } } } } }
  }
}`);
const EVENTS = parse("subscription ($runId: ID!) { runEvents(runId: $runId) { status cost { amount currency } costUnpriced } }");
const TOTALS = parse(`query ($workspace: ID!, $before: DateTime!, $after: DateTime!) {
  workspace(id: $workspace) { cost { amount currency } since: cost(since: $before) { amount } costUnpriced sinceUnpriced: costUnpriced(since: $before) }
  viewer {
    cost { amount currency } since: cost(since: $before) { amount } later: cost(since: $after) { amount }
    costUnpriced sinceUnpriced: costUnpriced(since: $before) laterUnpriced: costUnpriced(since: $after)
  }
}`);
const TRACE_UNPRICED = parse("query ($id: ID!) { run(id: $id) { costUnpriced trace { ... on Trace { cost { amount } costUnpriced } } } }");

/** Decimal arithmetic (never floats) for the expectations too. */
const times = (amount: string, n: number) => toDecimal(amount).times(n).toString();

describe.each(backends)("priced runs with cached and reasoning tokens (%s)", (backend) => {
  let server: Server;
  let t: TestApp;
  let receiver: Receiver;
  const actor = { principalId: DEVELOPMENT_PRINCIPAL_ID };
  const request = (document: ReturnType<typeof parse>, variables: Record<string, unknown>) => t.client.request(document as any, variables) as Promise<any>;

  beforeAll(async () => {
    server = await startUsageServer();
    receiver = await startReceiver();
    const { port } = server.address() as AddressInfo;
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: MODEL, contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-priced-")),
      },
      webhooks: { allowedHosts: [receiver.host] },
      listen: true,
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
    await receiver?.close();
  });

  const settled = (runId: string) =>
    vi.waitFor(
      async () => {
        const run = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(run.status).toBe("SUCCEEDED");
        return run;
      },
      { timeout: 60_000, interval: 100 },
    );

  it("prices every model span exactly, and Run, Trace, Workspace and Principal totals are their exact sums", async () => {
    const started = new Date(Date.now() - 1000);
    // A webhook listening for successes (not delivered here): its outbox rows are the bodies it would be sent.
    expectType(
      (await t.client.request(CreateWebhookDocument, { input: { url: receiver.url, events: ["RUN_SUCCEEDED"] } })).createWebhook,
      "CreateWebhookSuccess",
    );
    const workspace = await t.app.services.workspaces.createWorkspace(actor, { title: "Priced", goal: "Find what it costs" });
    const { run: inWorkspace } = await t.app.services.admissions.admitRun(actor, { question: "What does it cost?", workspaceId: workspace.id });
    const { run: alone } = await t.app.services.admissions.admitRun(actor, { question: "And this one?" });
    await settled(inWorkspace.id);
    await settled(alone.id);

    const costs: Record<string, string> = {};
    for (const run of [inWorkspace, alone]) {
      const { run: seen } = await request(RUN, { id: encodeGlobalId("Run", run.id) });
      const spans = seen.trace.spans.edges.map((edge: { node: unknown }) => edge.node);
      const calls = spans.filter((span: { kind: string }) => span.kind === "MODEL_CALL");
      expect(calls.length).toBeGreaterThanOrEqual(2);
      for (const call of calls) expect(call).toMatchObject({ cost: { amount: CALL_COST, currency: "USD" }, costUnpriced: false });
      for (const span of spans.filter((s: { kind: string }) => s.kind !== "MODEL_CALL")) expect(span.cost).toBeNull();
      const total = times(CALL_COST, calls.length);
      expect(seen.cost).toEqual({ amount: total, currency: "USD" });
      expect(seen.trace.cost).toEqual({ amount: total, currency: "USD" });
      // The root span's cumulative cost is the whole run's.
      expect(spans.map((s: { cumulativeCost: { amount: string } }) => s.cumulativeCost.amount)).toContain(total);
      costs[run.id] = total;
    }

    // The webhook body of each ended run says what it cost, exactly as Run.cost.
    const bodies = await t.app.db.prisma.webhookMessage.findMany({ where: { type: "RUN_SUCCEEDED" } });
    for (const run of [inWorkspace, alone]) {
      const body = bodies.map((m) => JSON.parse(m.body) as { data: Record<string, unknown> }).find((b) => b.data.runId === encodeGlobalId("Run", run.id));
      expect(body?.data).toMatchObject({ status: "SUCCEEDED", cost: { amount: costs[run.id], currency: "USD" }, costUnpriced: false });
    }

    // runEvents on the settled run: its terminal status, once, with what the run cost in all.
    const events: unknown[] = [];
    for await (const event of { [Symbol.asyncIterator]: () => t.connect().subscribe(EVENTS as any, { runId: encodeGlobalId("Run", alone.id) }) })
      events.push((event as { runEvents: unknown }).runEvents);
    expect(events).toEqual([{ status: "SUCCEEDED", cost: { amount: costs[alone.id], currency: "USD" }, costUnpriced: false }]);

    const totals = await request(TOTALS, {
      workspace: encodeGlobalId("Workspace", workspace.id),
      before: started.toISOString(),
      after: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(totals.workspace.cost).toEqual({ amount: costs[inWorkspace.id], currency: "USD" });
    expect(totals.workspace.since.amount).toBe(costs[inWorkspace.id]);
    const both = toDecimal(costs[inWorkspace.id]!).plus(costs[alone.id]!).toString();
    expect(totals.viewer.cost).toEqual({ amount: both, currency: "USD" });
    expect(totals.viewer.since.amount).toBe(both);
    expect(totals.viewer.later.amount).toBe("0");
    // Every call had a price: nothing is left out.
    expect([totals.workspace.costUnpriced, totals.workspace.sinceUnpriced, totals.viewer.costUnpriced, totals.viewer.sinceUnpriced]).toEqual([
      false,
      false,
      false,
      false,
    ]);
    const { run: priced } = await request(TRACE_UNPRICED, { id: encodeGlobalId("Run", alone.id) });
    expect(priced).toEqual({ costUnpriced: false, trace: { cost: { amount: costs[alone.id] }, costUnpriced: false } });
  });

  it("says when a total leaves out calls whose model had no price: the trace, the workspace and the principal", async () => {
    const before = await request(TOTALS, { workspace: encodeGlobalId("Workspace", "none"), before: new Date().toISOString(), after: new Date().toISOString() });
    const spentBefore = before.viewer.cost.amount as string;
    const started = new Date(Date.now() - 1000);
    // The model's price is withdrawn: the next run's calls are unpriced.
    await t.app.db.prisma.modelPrice.deleteMany({ where: { model: MODEL } });
    const workspace = await t.app.services.workspaces.createWorkspace(actor, { title: "Unpriced", goal: "Use a model without a price" });
    const { run } = await t.app.services.admissions.admitRun(actor, { question: "What does this cost?", workspaceId: workspace.id });
    await settled(run.id);

    const { run: seen } = await request(TRACE_UNPRICED, { id: encodeGlobalId("Run", run.id) });
    expect(seen).toEqual({ costUnpriced: true, trace: { cost: { amount: "0" }, costUnpriced: true } });
    const totals = await request(TOTALS, {
      workspace: encodeGlobalId("Workspace", workspace.id),
      before: started.toISOString(),
      after: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(totals.workspace).toMatchObject({ cost: { amount: "0" }, costUnpriced: true, sinceUnpriced: true });
    // The principal's total is what its priced calls cost, unchanged, and says it leaves some out.
    expect(totals.viewer).toMatchObject({ cost: { amount: spentBefore }, costUnpriced: true, sinceUnpriced: true, laterUnpriced: false });
    await t.app.db.prisma.modelPrice.create({ data: PRICE });
  });
});
