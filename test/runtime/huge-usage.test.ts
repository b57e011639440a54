// What a model server reports as usage is data about a reply, never a reason to lose it: a token
// count past what a run's counters hold (billions of tokens) is kept at the most they hold
// (2,147,483,647), a sum of counts too, and so is a cost past what the cost columns hold. The run
// ends as its replies say, never INTERNAL_ERROR with its answer lost.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MAX_INT = 2_147_483_647;
/** The most a cost column holds (DECIMAL(20,10)). */
const MAX_COST = "9999999999.9999999999";

/** A reply of the script: the prompt tokens its usage reports; `call`: it asks for a tool instead of answering. */
type Step = { promptTokens: number; call?: boolean };

const frame = (fields: object) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "dear-model", ...fields })}\n\n`;
const delta = (value: object, finish: string | null) => frame({ choices: [{ index: 0, delta: value, finish_reason: finish }] });

/** A server answering each request with the step of its run's question (a JSON list of steps) it has reached. */
async function scriptedServer(): Promise<Server> {
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { messages: { role: string; content: string }[] };
    const steps = JSON.parse(questionOf(body.messages.find((m) => m.role === "user")!.content)) as Step[];
    const n = body.messages.filter((m) => m.role === "assistant").length;
    const step = steps[n]!;
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (step.call) {
      const call = { index: 0, id: `call_${n}`, type: "function", function: { name: "task_list", arguments: '{"action":"add","title":"x"}' } };
      res.write(delta({ tool_calls: [call] }, "tool_calls"));
    } else res.write(delta({ content: `Answer after ${n} calls.` }, "stop"));
    res.write(frame({ choices: [], usage: { prompt_tokens: step.promptTokens, completion_tokens: 5, total_tokens: step.promptTokens + 5 } }));
    res.end("data: [DONE]\n\n");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

describe.each(backends)("usage figures past what a run holds (%s)", (backend) => {
  let server: Server;
  let t: TestApp;

  beforeAll(async () => {
    server = await scriptedServer();
    const { port } = server.address() as AddressInfo;
    const model = new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk", model: "dear-model", contextWindow: 32_000, maxRetries: 0 });
    t = await startTestApp(backend, { runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-usage-")) } });
    // The dearest price there is: billions of tokens at it cost far more than a cost column holds.
    await t.app.db.prisma.modelPrice.create({
      data: { model: "dear-model", effectiveFrom: new Date("2020-01-01T00:00:00Z"), inputPerMillion: "9999999999", outputPerMillion: "9999999999" },
    });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const runOf = async (steps: Step[]) => {
    const { run } = await admit(t.client, { question: JSON.stringify(steps), limits: { tokenBudget: 100_000_000 } });
    const view = await settled(t.client, run.id, 60_000);
    const id = Buffer.from(run.id, "base64").toString("utf8").split(":")[1]!;
    const row = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id }, select: { cost: true, costUnpriced: true, ownerId: true } });
    return { view, row };
  };

  it("a reply reporting 3 billion prompt tokens: the run ends with its answer, its tokens and cost at the most they hold", async () => {
    const { view, row } = await runOf([{ promptTokens: 3_000_000_000 }]);
    expect({ status: view.status, stopReason: view.stopReason, answer: view.answer }).toEqual({
      status: "SUCCEEDED",
      stopReason: "ANSWERED",
      answer: "Answer after 0 calls.",
    });
    expect(view.tokensUsed).toBe(MAX_INT);
    const call = view.trace!.spans.find((span) => span.kind === "MODEL_CALL")!;
    expect(call.usage).toEqual({ input: MAX_INT, output: 5, cached: 0, reasoning: 0 });
    expect({ cost: row.cost.toFixed(), costUnpriced: row.costUnpriced }).toEqual({ cost: MAX_COST, costUnpriced: false });
  });

  it("a second reply that takes the run's total past 2,147,483,647: the totals stay at it", async () => {
    const { view, row } = await runOf([{ promptTokens: 50_000_000, call: true }, { promptTokens: 3_000_000_000 }]);
    expect({ status: view.status, answer: view.answer }).toEqual({ status: "SUCCEEDED", answer: "Answer after 1 calls." });
    expect(view.tokensUsed).toBe(MAX_INT);
    // The trace's sum of its calls' usage, as the API gives it (GraphQL's Int).
    expect(view.trace!.usage).toEqual({ input: MAX_INT, output: 10, cached: 0, reasoning: 0 });
    expect(row.cost.toFixed()).toBe(MAX_COST);
    // The owner's spend of the day, added to by every run of these tests, stays at the most it holds.
    const daily = await t.app.db.prisma.principalDailyCost.findMany({ where: { principalId: row.ownerId } });
    expect(daily.map((d) => d.cost.toFixed())).toEqual([MAX_COST]);
  });
});
