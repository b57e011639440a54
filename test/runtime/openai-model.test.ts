// The OpenAI adapter against a real local HTTP server speaking chat completions with SSE streaming.
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ModelError, OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type ModelRequest, ModelRetryLater, type ModelStreamEvent } from "../../src/runtime/ports/model.js";
import { allowTimeFor } from "../support/wait.js";

type Received = { method: string; url: string; headers: IncomingHttpHeaders; body: any };
type Handler = (received: Received, res: ServerResponse) => void | Promise<void>;

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** Starts the fake server on an ephemeral port; returns its base URL and the requests it received. */
async function startServer(handler: Handler) {
  const received: Received[] = [];
  server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const text = Buffer.concat(parts).toString("utf8");
    const request = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: text ? JSON.parse(text) : null };
    received.push(request);
    await handler(request, res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}/v1`, received };
}

function startStream(res: ServerResponse) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
}
const send = (res: ServerResponse, data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, model = "gpt-test-2025-01-01") => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model,
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});
const usageChunk = {
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "gpt-test-2025-01-01",
  choices: [],
  usage: {
    prompt_tokens: 120,
    completion_tokens: 30,
    total_tokens: 150,
    prompt_tokens_details: { cached_tokens: 12 },
    completion_tokens_details: { reasoning_tokens: 7 },
  },
};

/** Replies with the given chunks, then the usage chunk and [DONE]. */
const streamOf =
  (chunks: unknown[]): Handler =>
  (_received, res) => {
    startStream(res);
    for (const c of chunks) send(res, c);
    send(res, usageChunk);
    res.end("data: [DONE]\n\n");
  };

const model = (baseURL: string, extra: Partial<ConstructorParameters<typeof OpenAIModel>[0]> = {}) =>
  new OpenAIModel({ baseURL, apiKey: "sk-test-123", model: "gpt-test", contextWindow: 64_000, maxRetries: 0, ...extra });

const simpleRequest = (signal?: AbortSignal): ModelRequest => ({
  messages: [{ role: "user", content: "Say hello" }],
  tools: [],
  ...(signal && { signal }),
});

describe("OpenAIModel", () => {
  it("labels itself and is not scripted", () => {
    const m = model("http://127.0.0.1:1/v1");
    expect(m.label).toBe("openai:gpt-test");
    expect(m.model).toBe("gpt-test"); // the name requests ask for
    expect(m.scripted).toBe(false);
    expect(m.contextWindow).toBe(64_000);
  });

  it("streams a text reply: deltas in order, joined content, reasoning deltas and usage from the usage chunk", async () => {
    const { baseURL } = await startServer(
      streamOf([
        chunk({ role: "assistant", content: "" }),
        chunk({ reasoning_content: "Think" }),
        chunk({ reasoning: "ing…" }),
        chunk({ content: "Hel" }),
        chunk({ content: "lo, " }),
        chunk({ content: "world" }),
        chunk({}, "stop"),
      ]),
    );
    const events: ModelStreamEvent[] = [];
    const response = await model(baseURL).complete(simpleRequest(), (event) => events.push(event));

    expect(events).toEqual([
      { type: "reasoning", delta: "Think" },
      { type: "reasoning", delta: "ing…" },
      { type: "text", delta: "Hel" },
      { type: "text", delta: "lo, " },
      { type: "text", delta: "world" },
    ]);
    expect(response).toEqual({
      content: "Hello, world",
      toolCalls: [],
      usage: { input: 120, output: 30, cached: 12, reasoning: 7 },
      finishReason: "stop",
      model: "gpt-test-2025-01-01",
    });
  });

  it("assembles tool calls whose argument fragments interleave across chunks, in index order", async () => {
    const { baseURL } = await startServer(
      streamOf([
        chunk({ role: "assistant", content: null }),
        // The second call starts first; ids and names come only in each call's first fragment.
        chunk({ tool_calls: [{ index: 1, id: "call_B", type: "function", function: { name: "fetch_page", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, id: "call_A", type: "function", function: { name: "search", arguments: '{"qu' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '{"url":"https://exa' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'ery":"EU battery ' } }] }),
        chunk({
          tool_calls: [
            { index: 1, function: { arguments: 'mple.org/a?b=1"}' } },
            { index: 0, function: { arguments: 'cells","limit":5}' } },
          ],
        }),
        chunk({}, "tool_calls"),
      ]),
    );
    const events: ModelStreamEvent[] = [];
    const response = await model(baseURL).complete(simpleRequest(), (event) => events.push(event));

    expect(response.finishReason).toBe("tool_calls");
    expect(response.content).toBeNull();
    expect(response.toolCalls.map(({ id, name }) => ({ id, name }))).toEqual([
      { id: "call_A", name: "search" },
      { id: "call_B", name: "fetch_page" },
    ]);
    expect(JSON.parse(response.toolCalls[0]!.arguments)).toEqual({ query: "EU battery cells", limit: 5 });
    expect(JSON.parse(response.toolCalls[1]!.arguments)).toEqual({ url: "https://example.org/a?b=1" });
    // Each call's argument text is reported as it streams, with the call's id, then each call whole.
    expect(events).toEqual([
      { type: "tool_call_delta", index: 0, id: "call_A", delta: '{"qu' },
      { type: "tool_call_delta", index: 1, id: "call_B", delta: '{"url":"https://exa' },
      { type: "tool_call_delta", index: 0, id: "call_A", delta: 'ery":"EU battery ' },
      { type: "tool_call_delta", index: 1, id: "call_B", delta: 'mple.org/a?b=1"}' },
      { type: "tool_call_delta", index: 0, id: "call_A", delta: 'cells","limit":5}' },
      ...response.toolCalls.map((call, index) => ({ type: "tool_call", index, call })),
    ]);
  });

  it("sends our messages, tools and options in the chat-completions shape with the bearer key", async () => {
    const { baseURL, received } = await startServer(streamOf([chunk({ content: "ok" }, "stop")]));
    const request: ModelRequest = {
      messages: [
        { role: "system", content: "You are careful." },
        { role: "user", content: "Find battery data" },
        {
          role: "assistant",
          content: null,
          toolCalls: [{ id: "call_1", name: "search", arguments: '{"query":"battery"}' }],
        },
        { role: "tool", toolCallId: "call_1", content: "3 results" },
        { role: "assistant", content: "Found 3." },
      ],
      tools: [
        {
          name: "search",
          description: "Searches the web",
          parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
        },
      ],
      maxOutputTokens: 256,
    };
    await model(baseURL).complete(request);

    expect(received).toHaveLength(1);
    const [{ method, url, headers, body }] = received as [Received];
    expect(method).toBe("POST");
    expect(url).toBe("/v1/chat/completions");
    expect(headers.authorization).toBe("Bearer sk-test-123");
    expect(body).toMatchObject({
      model: "gpt-test",
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 256,
    });
    expect(body.messages).toEqual([
      { role: "system", content: "You are careful." },
      { role: "user", content: "Find battery data" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "search", arguments: '{"query":"battery"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "3 results" },
      { role: "assistant", content: "Found 3." },
    ]);
    expect(body.tools).toEqual([{ type: "function", function: request.tools[0] }]);
  });

  it("omits tools and max_completion_tokens when the request has none", async () => {
    const { baseURL, received } = await startServer(streamOf([chunk({ content: "ok" }, "stop")]));
    await model(baseURL).complete(simpleRequest());
    expect(received[0]!.body).not.toHaveProperty("tools");
    expect(received[0]!.body).not.toHaveProperty("max_completion_tokens");
  });

  it("past its retries, rejects an HTTP 500 as ModelRetryLater whose cause is a ModelError naming the status", async () => {
    const { baseURL, received } = await startServer((_received, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "The server had an error", type: "server_error", code: null } }));
    });
    const error = await model(baseURL)
      .complete(simpleRequest())
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ModelRetryLater);
    const cause = (error as ModelRetryLater).cause;
    expect(cause).toBeInstanceOf(ModelError);
    expect((cause as ModelError).message).toContain("500");
    expect((error as ModelRetryLater).message).toContain("The server had an error");
    expect(cause).toMatchObject({ status: 500, retryable: true });
    expect(received).toHaveLength(1); // maxRetries: 0
  });

  it("rejects a server that cannot be reached with a retryable ModelError naming its address and why", async () => {
    const { baseURL } = await startServer(() => undefined);
    server!.close();
    await once(server!, "close");
    const error = await model(baseURL)
      .complete(simpleRequest())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ status: undefined, retryable: true });
    expect((error as ModelError).message).toMatch(
      new RegExp(`^openai:gpt-test: could not reach the model server at ${baseURL.replaceAll(".", "\\.")}: .*\\(connect ECONNREFUSED`),
    );
  });

  it("rejects a 401 as a non-retryable ModelError", async () => {
    const { baseURL } = await startServer((_received, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "Incorrect API key", type: "invalid_request_error", code: "invalid_api_key" } }));
    });
    const error = await model(baseURL)
      .complete(simpleRequest())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ status: 401, code: "invalid_api_key", retryable: false });
  });

  it("rejects a stream cut off before any finish reason instead of returning partial output", async () => {
    const { baseURL } = await startServer((_received, res) => {
      startStream(res);
      send(res, chunk({ tool_calls: [{ index: 0, id: "call_A", type: "function", function: { name: "search", arguments: '{"q' } }] }));
      res.end();
    });
    await expect(model(baseURL).complete(simpleRequest())).rejects.toThrow(/finish reason/);
  });

  it("rejects promptly with an AbortError when aborted mid-stream", async () => {
    const { baseURL } = await startServer((_received, res) => {
      startStream(res);
      send(res, chunk({ content: "first" }));
      // …and never sends anything else.
    });
    const controller = new AbortController();
    let firstText!: () => void;
    const gotFirstText = new Promise<void>((resolve) => (firstText = resolve));
    const events: ModelStreamEvent[] = [];
    const pending = model(baseURL)
      .complete(simpleRequest(controller.signal), (event) => {
        events.push(event);
        firstText();
      })
      .catch((e: unknown) => e);
    await gotFirstText;
    await allowTimeFor("the stream to go idle, waiting on the server", 50);
    const abortedAt = performance.now();
    controller.abort();
    const error = await pending;

    expect(performance.now() - abortedAt).toBeLessThan(1_000);
    expect(events).toEqual([{ type: "text", delta: "first" }]);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe("AbortError");
    expect(error).not.toBeInstanceOf(ModelError);
  });

  it("rejects promptly when aborted while waiting for the response headers", async () => {
    const { baseURL, received } = await startServer(() => {
      // Never answers.
    });
    const controller = new AbortController();
    const pending = model(baseURL).complete(simpleRequest(controller.signal));
    await vi.waitFor(() => expect(received).not.toHaveLength(0), { timeout: 10_000, interval: 5 });
    const start = performance.now();
    controller.abort(new Error("run cancelled"));
    const error = await pending.catch((e: unknown) => e);

    expect(performance.now() - start).toBeLessThan(1_000);
    expect(error).toMatchObject({ name: "AbortError", cause: new Error("run cancelled") });
  });

  it("warms up when its process starts without sending anything, then asks the server as before", async () => {
    const { baseURL, received } = await startServer(streamOf([chunk({ content: "ok" }, "stop")]));
    const m = model(baseURL);
    await m.warm();
    expect(received).toHaveLength(0);
    expect((await m.complete(simpleRequest())).content).toBe("ok");
    expect(received).toHaveLength(1);
  });

  it("rejects an already-aborted signal without sending a request", async () => {
    const { baseURL, received } = await startServer(streamOf([chunk({ content: "ok" }, "stop")]));
    const error = await model(baseURL)
      .complete(simpleRequest(AbortSignal.abort()))
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe("AbortError");
    expect(received).toHaveLength(0);
  });
});
