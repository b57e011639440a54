// A model server that reports no usage (no stream_options.include_usage, or a proxy that drops the
// usage chunk) does not make its requests free: each is charged its bound — the input tokens
// Dossier counted for it and the output it counts in the reply — so the cost caps and the token
// budget hold, and its span says the usage is estimated (usageEstimated).
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
import { PRICE } from "../support/priced-model-server.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "priced-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

describe.each(backends)("requests whose server reports no usage (%s)", (backend) => {
  let server: Server;
  let t: TestApp;
  /** Requests made, by question. */
  const requests = new Map<string, number>();

  beforeAll(async () => {
    // Every request: "Step n." and one task_list call, until the sixth, which answers; never any usage.
    server = createServer(async (req, res) => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { messages: { role: string; content: string }[] };
      const question = questionOf(body.messages.find((m) => m.role === "user")!.content);
      requests.set(question, (requests.get(question) ?? 0) + 1);
      const step = body.messages.filter((m) => m.role === "assistant").length + 1;
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (step >= 6) res.write(frame({ content: `Answer ${step}.` }, "stop"));
      else {
        res.write(frame({ content: `Step ${step}.` }));
        const args = JSON.stringify({ action: "add", title: `item ${step}` });
        res.write(frame({ tool_calls: [{ index: 0, id: `call_${step}`, type: "function", function: { name: "task_list", arguments: args } }] }, "tool_calls"));
      }
      res.end("data: [DONE]\n\n");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const model = new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk", model: "priced-model", contextWindow: 32_000, maxRetries: 0 });
    // A request may write 10 tokens: its bound is 1 USD of output (at 100,000 USD/M) plus its input estimate (at 100 USD/M).
    t = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-no-usage-")), contextBudget: { reservedOutput: 10 } },
    });
    await t.app.db.prisma.modelPrice.create({ data: PRICE });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const rowOf = (runId: string) => {
    const id = Buffer.from(runId, "base64").toString("utf8").split(":")[1]!;
    return t.app.db.prisma.run.findUniqueOrThrow({
      where: { id },
      select: {
        cost: true,
        costUnpriced: true,
        tokensUsed: true,
        trace: { select: { spans: { where: { kind: "MODEL_CALL" }, select: { usage: true, cost: true, attributes: true } } } },
      },
    });
  };

  it("are charged their bound: maxCost stops the run once what they were charged and the next bound would pass it", async () => {
    const question = "Spend with care";
    const { run } = await admit(t.client, { question, limits: { maxTurns: 50, maxCost: "3" } });
    const view = await settled(t.client, run.id, 60_000);
    expect({ status: view.status, stopReason: view.stopReason }).toEqual({ status: "SUCCEEDED", stopReason: "BUDGET" });
    // The first request's charge (its input at 100 USD/M, the ~19 tokens counted in "Step 1." and its
    // call at 100,000 USD/M: ~2 USD) and the next request's bound (~1 USD) pass 3 USD: one request only.
    expect(view.answer).toBe("Step 1.");
    expect(requests.get(question)).toBe(1);
    const row = await rowOf(run.id);
    expect(row.cost.toNumber()).toBeGreaterThan(1);
    expect(row.cost.toNumber()).toBeLessThanOrEqual(3);
    expect(row.costUnpriced).toBe(false);
    const calls = row.trace!.spans;
    expect(calls).toHaveLength(1);
    for (const call of calls) {
      const usage = call.usage as { input: number; output: number };
      expect(usage.input).toBeGreaterThan(0);
      expect(usage.output).toBeGreaterThan(0);
      expect(JSON.parse(JSON.stringify(call.attributes))).toMatchObject({ usageEstimated: true });
    }
    expect(row.tokensUsed).toBe(calls.reduce((sum, call) => sum + (call.usage as { input: number }).input + (call.usage as { output: number }).output, 0));
  });

  it("count against the token budget: the run stops once its requests' counted tokens pass it", async () => {
    const question = "Count every token";
    const { run } = await admit(t.client, { question, limits: { maxTurns: 50, tokenBudget: 1 } });
    const view = await settled(t.client, run.id, 60_000);
    expect({ status: view.status, failureReason: view.failureReason }).toEqual({ status: "FAILED", failureReason: "TOKEN_BUDGET" });
    expect(requests.get(question)).toBe(1);
    expect(view.tokensUsed).toBeGreaterThan(1);
  });
});
