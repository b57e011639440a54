// An OpenAI-protocol server that reports usage, for the cost caps' tests (issue 40): each request
// costs exactly 1.005 USD at PRICE (50 input tokens at 100 USD/M, 10 output tokens at 100,000 USD/M).
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { toDecimal } from "../../src/domain/costs/pricing.js";

const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "priced-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const USAGE = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "priced-model", choices: [], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 } })}\n\n`;
export const REQUEST_COST = toDecimal("1.005");
export const PRICE = { model: "priced-model", effectiveFrom: new Date("2020-01-01T00:00:00Z"), inputPerMillion: "100", outputPerMillion: "100000" };

export type Body = { messages: { role: string; content?: string | null }[]; max_completion_tokens?: number };

/**
 * Every request: "Step n." (n: the run's requests so far) and one task_list call; from request
 * `answerAt` on (if given), "Answer n." as the final answer instead. `hold` (if given) is awaited
 * before each response is written: a test holds a request in flight while it acts on the run.
 * `callId` gives the id of step n's call (`call_<n>` by default).
 */
export async function startPricedServer(
  bodies: Body[],
  answerAt = Number.POSITIVE_INFINITY,
  hold?: () => Promise<void>,
  callId = (step: number) => `call_${step}`,
): Promise<Server> {
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as Body;
    bodies.push(body);
    const step = body.messages.filter((m) => m.role === "assistant").length + 1;
    await hold?.();
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (step >= answerAt) {
      res.write(frame({ role: "assistant", content: `Answer ${step}.` }, "stop"));
      res.write(USAGE);
      res.end("data: [DONE]\n\n");
      return;
    }
    res.write(frame({ role: "assistant", content: `Step ${step}.` }));
    const args = JSON.stringify({ action: "add", title: `item ${step}` });
    res.write(frame({ tool_calls: [{ index: 0, id: callId(step), type: "function", function: { name: "task_list", arguments: args } }] }, "tool_calls"));
    res.write(USAGE);
    res.end("data: [DONE]\n\n");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}
