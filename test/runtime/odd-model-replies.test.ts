// What a model streams is data, not input to reject: replies that do not have the chat-completions
// shape (ids and names that are not text, objects in place of lists, content as a list of parts,
// arguments as an object) are kept, the run goes on to the model's next reply and settles
// SUCCEEDED, and a later run of the same conversation — which reads that reply back from the log —
// succeeds too. A real HTTP server speaking the OpenAI protocol is the model.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit } from "../support/fixtures.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Message = { role: string; content?: unknown; tool_call_id?: unknown; tool_calls?: { id: unknown; function: { name: unknown } }[] };
type Body = { messages: Message[] };

const chunk = (choices: unknown) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices })}\n\n`;
const frame = (delta: object, finish: string | null = null) => chunk([{ index: 0, delta, finish_reason: finish }]);
const USAGE = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } })}\n\n`;
const toolCall = (call: object) => frame({ tool_calls: [{ index: 0, type: "function", ...call }] }, "tool_calls");
const NO_NAME = 'Error: there is no tool named "".';

type Case = { frames: string[]; answer: string; shown?: string };
/** Each row: the model's odd reply to the question that names it; `shown` is the tool result it is then sent. */
const CASES: Record<string, Case> = {
  "numeric-id": {
    frames: [toolCall({ id: 7, function: { name: "task_list", arguments: '{"action":"add","title":"Seven"}' } })],
    answer: "done",
    shown: "1. [ ] Seven",
  },
  "numeric-name": { frames: [toolCall({ id: "c2", function: { name: 42, arguments: "{}" } })], answer: "done", shown: NO_NAME },
  "null-name": { frames: [toolCall({ id: "c3", function: { name: null, arguments: "{}" } })], answer: "done", shown: NO_NAME },
  "object-arguments": {
    frames: [toolCall({ id: "c4", function: { name: "task_list", arguments: { action: "add", title: "Object" } } })],
    answer: "done",
    shown: "1. [ ] Object",
  },
  "choices-object": { frames: [chunk({ x: 1 }), frame({ content: "fine" }, "stop")], answer: "fine" },
  "tool-calls-object": {
    frames: [
      frame(
        { tool_calls: { index: 0, id: "c6", type: "function", function: { name: "task_list", arguments: '{"action":"add","title":"Alone"}' } } },
        "tool_calls",
      ),
    ],
    answer: "done",
    shown: "1. [ ] Alone",
  },
  "content-parts": {
    frames: [
      frame(
        {
          content: [
            { type: "text", text: "Hello " },
            { type: "image_url", image_url: { url: "https://example.com/a.png" } },
            { type: "text", text: " world" },
          ],
        },
        "stop",
      ),
    ],
    answer: "Hello [image_url part] world",
  },
};

/** The requests the model received, by the question they ask. */
const requests = new Map<string, Body[]>();

/** The model's reply to a request: the case's odd reply to its question, "done" once a tool result is back. */
function replyTo(body: Body): string[] {
  const asked = body.messages.findLastIndex((m) => m.role === "user");
  const question = questionOf(String(body.messages[asked]?.content));
  requests.set(question, [...(requests.get(question) ?? []), body]);
  const name = /^Handle \[(.+)\]$/.exec(question)?.[1];
  const answered = body.messages.slice(asked).some((m) => m.role === "tool");
  if (name && !answered) return CASES[name]!.frames;
  return [frame({ content: answered ? "done" : "still fine" }, "stop")];
}

describe("odd model replies", () => {
  let server: Server;
  let t: TestApp;

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      const frames = replyTo(JSON.parse(Buffer.concat(parts).toString("utf8")) as Body);
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const each of frames) res.write(each);
      res.write(USAGE);
      res.end("data: [DONE]\n\n");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    t = await startTestApp("pglite", {
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk", model: "m", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-odd-replies-")),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it.each(Object.entries(CASES))("%s: the run goes on to the model's next reply, and a later run of the conversation succeeds", async (name, row) => {
    const { run } = await admit(t.client, { question: `Handle [${name}]` });
    const view = await settled(t.client, run.id, 30_000);
    expect({ status: view.status, failureReason: view.failureReason, answer: view.answer }).toEqual({
      status: "SUCCEEDED",
      failureReason: null,
      answer: row.answer,
    });
    const sent = requests.get(`Handle [${name}]`)!;
    if (row.shown !== undefined) {
      // The model is sent its call back, with an id and a name that are text, and the call's result.
      expect(sent).toHaveLength(2);
      const call = sent[1]!.messages.findLast((m) => m.role === "assistant")!.tool_calls![0]!;
      expect(typeof call.id).toBe("string");
      expect(typeof call.function.name).toBe("string");
      const result = sent[1]!.messages.findLast((m) => m.role === "tool")!;
      expect({ id: result.tool_call_id, content: result.content }).toEqual({ id: call.id, content: row.shown });
    }

    const again = await admit(t.client, { question: `And then, after ${name}?`, conversationId: run.conversation.id });
    const next = await settled(t.client, again.run.id, 30_000);
    expect({ status: next.status, failureReason: next.failureReason, answer: next.answer }).toEqual({
      status: "SUCCEEDED",
      failureReason: null,
      answer: "still fine",
    });
    // The later run's request holds the earlier run's reply as it was kept.
    const history = requests.get(`And then, after ${name}?`)![0]!.messages;
    const kept = history.filter((m) => m.role === "assistant").map((m) => m.content);
    expect(kept).toContain(row.answer);
  });
});
