// The OpenAI adapter keeps what a server streams even when its chunks do not have the protocol's
// shape: items that are not objects are passed over, values of the wrong type are kept as text or
// left out, and the reply resolves instead of rejecting.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import type { ModelStreamEvent } from "../../src/runtime/ports/model.js";

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server answering every request with these `data:` payloads, then [DONE]. */
async function serverSending(payloads: unknown[]): Promise<string> {
  server = createServer(async (req, res) => {
    for await (const _ of req);
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const payload of payloads) res.write(`data: ${JSON.stringify(payload)}\n\n`);
    res.end("data: [DONE]\n\n");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const chunk = (fields: object) => ({ id: "c", object: "chat.completion.chunk", created: 1, ...fields });
const complete = (baseURL: string, onEvent?: (event: ModelStreamEvent) => void) =>
  new OpenAIModel({ baseURL, apiKey: "sk", model: "gpt-test", contextWindow: 64_000, maxRetries: 0 }).complete(
    { messages: [{ role: "user", content: "Hi" }], tools: [] },
    onEvent,
  );

describe("OpenAIModel on chunks that do not have the protocol's shape", () => {
  it("passes over what is not an object and keeps the rest: text, a call, the configured model, usage it can count", async () => {
    const baseURL = await serverSending([
      null,
      7,
      chunk({ model: 5, choices: [null, { index: 0, delta: "text in place of a delta" }] }),
      chunk({ choices: [{ index: 0, delta: { content: "Hel", refusal: 3 } }] }),
      chunk({
        choices: [{ index: 0, delta: { content: { text: "lo" }, tool_calls: [null, 5, { index: 0, id: "", function: { name: "search", arguments: 12 } }] } }],
      }),
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 1 }] }),
      chunk({
        choices: [],
        usage: { prompt_tokens: "many", completion_tokens: 4, prompt_tokens_details: 9, completion_tokens_details: { reasoning_tokens: -2 } },
      }),
    ]);
    const events: ModelStreamEvent[] = [];
    const response = await complete(baseURL, (event) => events.push(event));
    expect(response).toEqual({
      content: 'Hel3{"text":"lo"}',
      // No id given: an empty one, for the run to give the call one of Dossier's own (loop/call-ids.ts).
      toolCalls: [{ id: "", name: "search", arguments: "12" }],
      usage: { input: 0, output: 4, cached: 0, reasoning: 0 },
      finishReason: "1",
      model: "gpt-test",
    });
    expect(events).toEqual([
      { type: "text", delta: "Hel3" },
      { type: "text", delta: '{"text":"lo"}' },
      { type: "tool_call_delta", index: 0, delta: "12" },
      { type: "tool_call", index: 0, call: response.toolCalls[0] },
    ]);
  });

  it("keeps content parts: each text part's text, any other part as a placeholder naming its type, other values as their JSON", async () => {
    const parts = [
      { type: "text", text: "See " },
      { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      "plain",
      { type: "refusal", refusal: " no" },
      4,
    ];
    const baseURL = await serverSending([chunk({ choices: [{ index: 0, delta: { content: parts }, finish_reason: "stop" }] })]);
    const response = await complete(baseURL);
    expect(response.content).toBe("See [image_url part]plain no4");
  });
});
