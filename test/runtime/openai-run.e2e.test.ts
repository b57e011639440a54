// R2 end to end: a whole run executed by the openai adapter against a real local HTTP server
// speaking the chat-completions protocol, with streamed tool calls — not the scripted model.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/logger.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type ChatBody = { model: string; stream: boolean; messages: { role: string; content?: string; tool_call_id?: string }[] };

const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "local-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = (input: number, output: number) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "local-model", choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output, prompt_tokens_details: { cached_tokens: 5 } } })}\n\n`;

describe("a run answered through the openai adapter", () => {
  let server: Server;
  let t: TestApp;
  const bodies: ChatBody[] = [];

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as ChatBody;
      bodies.push(body);
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (!body.messages.some((m) => m.role === "tool")) {
        // First turn: two tool calls whose arguments arrive in interleaved fragments.
        res.write(
          frame({
            role: "assistant",
            tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "write_file", arguments: '{"path":"notes.md",' } }],
          }),
        );
        res.write(frame({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "task_list", arguments: '{"action":' } }] }));
        res.write(frame({ tool_calls: [{ index: 0, function: { arguments: '"content":"EU cells"}' } }] }));
        res.write(frame({ tool_calls: [{ index: 1, function: { arguments: '"add","title":"Verify"}' } }] }, "tool_calls"));
        res.write(usage(200, 40));
      } else {
        for (const piece of ["Wrote the ", "notes and ", "planned."]) res.write(frame({ content: piece }));
        res.write(frame({}, "stop"));
        res.write(usage(300, 12));
      }
      res.end("data: [DONE]\n\n");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    t = await startTestApp("pglite", {
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: "local-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-openai-")),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("executes the streamed tool calls, sends their results back, and settles with the streamed answer", async () => {
    const { run } = await admit(t.client, { question: "Take notes on EU cells" });
    const view = await vi.waitFor(
      async () => {
        const current = (await t.client.runTrace(run.id))!;
        expect(["QUEUED", "RUNNING"]).not.toContain(current.status);
        return current;
      },
      { timeout: 15_000 },
    );
    expect(view).toMatchObject({ status: "SUCCEEDED", answer: "Wrote the notes and planned.", model: "openai:local-model", tokensUsed: 552 });
    expect(bodies[0]).toMatchObject({ model: "local-model", stream: true });
    const toolResults = bodies[1]!.messages.filter((m) => m.role === "tool");
    expect(toolResults.map((m) => m.tool_call_id)).toEqual(["call_a", "call_b"]);
    expect(toolResults[0]!.content).toMatch(/^Wrote 8 bytes to notes.md/);
    expect(toolResults[1]!.content).toBe("1. [ ] Verify");
    expect(view!.trace!.usage).toEqual({ input: 500, output: 52, cached: 10, reasoning: 0 });
    // The model-call spans name the model the requests asked for, as OpenTelemetry's gen_ai.request.model.
    const calls = view.trace!.spans.filter((span) => span.kind === "MODEL_CALL");
    expect(calls.map((span) => JSON.parse(span.attributes)["gen_ai.request.model"])).toEqual([bodies[0]!.model, bodies[1]!.model]);
    expect(bodies[0]!.model).toBe("local-model");
  });
});

describe("a run whose model server cannot be reached", () => {
  let t: TestApp | undefined;
  afterAll(async () => {
    await t?.close();
  });

  it("fails with MODEL_ERROR, and the log says so at warn level with the run id, the server's address and why", async () => {
    // A port that was just free: nothing listens on it any more.
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const lines: string[] = [];
    t = await startTestApp("pglite", {
      logger: createLogger("info", (line) => lines.push(line)),
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: "local-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-openai-")),
      },
    });
    const { run } = await admit(t.client, { question: "Is anyone there?" });
    const view = await vi.waitFor(
      async () => {
        const current = (await t!.client.runTrace(run.id))!;
        expect(["QUEUED", "RUNNING"]).not.toContain(current.status);
        return current;
      },
      { timeout: 15_000 },
    );
    expect(view).toMatchObject({ status: "FAILED", failureReason: "MODEL_ERROR" });
    const runId = Buffer.from(run.id, "base64").toString().split(":")[1]!;
    const settledLine = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.message === "run settled");
    expect(settledLine).toMatchObject({ level: "warn", runId, status: "FAILED", failureReason: "MODEL_ERROR" });
    expect(settledLine!.error).toMatch(new RegExp(`could not reach the model server at http://127\\.0\\.0\\.1:${port}/v1: .*ECONNREFUSED`));
  });
});
