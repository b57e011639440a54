// A reply whose values nest deeper than JSON.stringify can follow (tens of thousands of levels) is
// kept as the server sent it: arguments given as a JSON value rather than text, content given as
// one, are kept as their JSON text and the run goes on — never MODEL_ERROR with the reply lost.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** 20,000 lists, one in the other: JSON.parse reads it, JSON.stringify throws on it (RangeError). */
const DEEP = "[".repeat(20_000) + "]".repeat(20_000);
const chunk = (choices: string) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":${choices}}\n\n`;
const USAGE = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 5, completion_tokens: 5 } })}\n\n`;

describe("replies with deeply nested JSON", () => {
  let server: Server;
  let t: TestApp;
  let requests = 0;

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { messages: { role: string }[] };
      requests += 1;
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (!body.messages.some((m) => m.role === "tool")) {
        // Content and a call's arguments as JSON values (not text), each 20,000 levels deep.
        const call = `{"index":0,"id":"c1","type":"function","function":{"name":"task_list","arguments":${DEEP}}}`;
        res.write(chunk(`[{"index":0,"delta":{"content":{"deep":${DEEP}},"tool_calls":[${call}]},"finish_reason":"tool_calls"}]`));
      } else res.write(chunk(`[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]`));
      res.write(USAGE);
      res.end("data: [DONE]\n\n");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const model = new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk", model: "m", contextWindow: 200_000, maxRetries: 0 });
    t = await startTestApp("pglite", { runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-deep-")) } });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("are kept as their JSON text: the call is answered and the run ends with the model's answer", async () => {
    const { run } = await admit(t.client, { question: "Go deep" });
    const view = await settled(t.client, run.id, 60_000);
    expect({ status: view.status, failureReason: view.failureReason, answer: view.answer, requests }).toEqual({
      status: "SUCCEEDED",
      failureReason: null,
      answer: "done",
      requests: 2,
    });
    const id = Buffer.from(run.id, "base64").toString("utf8").split(":")[1]!;
    const log = await t.app.db.prisma.message.findMany({
      where: { runId: id },
      orderBy: { seq: "asc" },
      select: { role: true, content: true, toolCalls: true },
    });
    const reply = log.find((m) => m.role === "ASSISTANT")!;
    // The reply as the server sent it: its content and its call's arguments, each as its JSON.
    expect(reply.content).toBe(`{"deep":${DEEP}}`);
    expect((reply.toolCalls as { arguments: string }[])[0]!.arguments).toBe(DEEP);
    // The call was answered (whatever task_list makes of a list for arguments), then the model answered.
    expect(log.map((m) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
  });
});
