// A model reply of unbounded size never takes its worker down: against a real HTTP server speaking
// the OpenAI streaming protocol, a reply that streams past MODEL_MAX_REPLY_BYTES (text, tool-call
// arguments, or a small gzip body inflating to megabytes) is read no further — the server sees its
// connection closed — and stands as what came within the bound, as a reply the model cut at its
// token limit does: finish reason "length", the tool call the bound cut neither run nor held for
// approval, the span saying why. The run finishes; another run of the same worker is unaffected.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { CALL_BYTES, prefixOfBytes } from "../../src/runtime/adapters/reply-size.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { closedAfterEach } from "../support/per-test.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp } from "../support/test-app.js";
import { countedDeployTool } from "../support/deploy-tool.js";

const closing = closedAfterEach();
/** The bound the tests configure: 64 KiB. */
const BOUND = 64 * 1024;
/** What a flooding server would send, were it read whole: 128 times the bound. */
const FLOOD = 128 * BOUND;
const PIECE = "x".repeat(1000);

const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "flood-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const toolFragment = (index: number, fragment: object) => frame({ tool_calls: [{ index, ...fragment }] });

/**
 * The text a reply of these events keeps within BOUND: each counts its text, cut at a character
 * once the bound would be passed, or, carrying none, its bytes on the wire (the frame).
 */
function keptOf(events: { frame: string; text: string }[]): string {
  let used = 0;
  let kept = "";
  for (const { frame, text } of events) {
    const bytes = Buffer.byteLength(text);
    if (used + bytes > BOUND) return kept + prefixOfBytes(text, BOUND - used);
    used += bytes;
    kept += text;
    if (bytes === 0) used += Buffer.byteLength(frame);
    if (used > BOUND) return kept;
  }
  throw new Error("the events fit within the bound");
}
/** PIECE a chunk, as floodText streams it: the text its reply keeps. */
const KEPT_OF_FLOOD = keptOf(Array.from({ length: BOUND / PIECE.length + 1 }, () => ({ frame: frame({ content: PIECE }), text: PIECE })));

/** How a reply went on the server: what it wrote, and whether its connection closed before it was written whole. */
type Written = { bytes: number; closedEarly: boolean };

/** Writes `head`, then `piece()` until `limit` bytes (FLOOD) are written or the connection closes, then `tail`. */
async function flood(res: ServerResponse, written: Written, head: string, piece: () => string, tail: string, limit = FLOOD): Promise<void> {
  res.on("close", () => (written.closedEarly = !res.writableFinished));
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write(head);
  while (written.bytes < limit && !res.destroyed) {
    const text = piece();
    written.bytes += text.length;
    if (!res.write(text)) await Promise.race([once(res, "drain"), once(res, "close")]);
  }
  if (!res.destroyed) res.end(tail);
}

type Answer = (res: ServerResponse, written: Written) => Promise<void> | void;

/** A server answering each request as `answerFor` chooses by its question and how many times it was asked before; what each reply wrote, in order. */
async function startServer(answerFor: (question: string, before: number) => Answer) {
  const replies: Written[] = [];
  const asked = new Map<string, number>();
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { messages: { role: string; content: string }[] };
    const written: Written = { bytes: 0, closedEarly: false };
    replies.push(written);
    const question = questionOf(body.messages.find((m) => m.role === "user")!.content);
    const before = asked.get(question) ?? 0;
    asked.set(question, before + 1);
    await answerFor(question, before)(res, written);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closing({ close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) });
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, replies };
}

/** Text without end: a thousand characters a chunk. */
const floodText: Answer = (res, written) => flood(res, written, "", () => frame({ content: PIECE }), `${frame({}, "stop")}data: [DONE]\n\n`);

/** "Deploying now.", a whole call of `task_list`, then a `deploy` call whose arguments never end. */
const floodCall: Answer = (res, written) =>
  flood(
    res,
    written,
    frame({ content: "Deploying now." }) +
      toolFragment(0, { id: "call_list", type: "function", function: { name: "task_list", arguments: '{"action":"list"}' } }) +
      toolFragment(1, { id: "call_deploy", type: "function", function: { name: "deploy", arguments: '{"target":"' } }),
    () => toolFragment(1, { function: { arguments: PIECE } }),
    `${toolFragment(1, { function: { arguments: '"}' } }) + frame({}, "tool_calls")}data: [DONE]\n\n`,
  );

const answer =
  (text: string): Answer =>
  (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(`${frame({ content: text }, "stop")}data: [DONE]\n\n`);
  };

/** A gzip body: small as sent, past the bound once inflated. */
const gzipped =
  (body: string): Answer =>
  (res, written) => {
    const sent = gzipSync(body);
    written.bytes = sent.length;
    res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
    res.end(sent);
  };

const modelOf = (baseURL: string) =>
  new OpenAIModel({ baseURL, apiKey: "sk-local", model: "flood-model", contextWindow: 32_000, maxRetries: 0, maxReplyBytes: BOUND });
const request: ModelRequest = { messages: [{ role: "user", content: "Say hello" }], tools: [] };

describe("the openai adapter, given a reply past MODEL_MAX_REPLY_BYTES", () => {
  it("text without end: keeps the bound's worth of text, ends it as 'length', and closes the connection", async () => {
    const { baseURL, replies } = await startServer(() => floodText);
    const reply = await modelOf(baseURL).complete(request);
    // A chunk that carries text counts its text only, not its frame: the bound is one on the reply.
    expect(reply.content).toBe("x".repeat(BOUND));
    expect(KEPT_OF_FLOOD).toBe("x".repeat(BOUND));
    expect(reply).toMatchObject({ finishReason: "length", cutAtBytes: BOUND, toolCallsLeftOut: 0, usageReported: false });
    await expect.poll(() => replies[0]!.closedEarly).toBe(true);
    expect(replies[0]!.bytes).toBeLessThan(FLOOD);
  });

  it("text of four-byte characters: cut at a character, within the bound counted in UTF-8 bytes", async () => {
    const { baseURL } = await startServer(() => (res, written) => flood(res, written, frame({ content: "é" }), () => frame({ content: "😀".repeat(500) }), ""));
    const reply = await modelOf(baseURL).complete(request);
    const bytes = Buffer.byteLength(reply.content!);
    // No half of a surrogate pair at the cut: the text reads back from UTF-8 as it is.
    expect(Buffer.from(reply.content!).toString("utf8")).toBe(reply.content);
    // "é" is two bytes, each "😀" four: the bound (a multiple of four) less two, and no more.
    const emoji = "😀".repeat(500);
    const events = [
      { frame: frame({ content: "é" }), text: "é" },
      ...Array.from({ length: BOUND / 2000 + 1 }, () => ({ frame: frame({ content: emoji }), text: emoji })),
    ];
    expect(reply.content).toBe(keptOf(events));
    expect(bytes).toBe(BOUND - 2);
    expect(reply).toMatchObject({ finishReason: "length", cutAtBytes: BOUND });
  });

  it("a tool call whose arguments pass the bound is left out; the whole call before it stands", async () => {
    const { baseURL, replies } = await startServer(() => floodCall);
    const reply = await modelOf(baseURL).complete(request);
    expect(reply.content).toBe("Deploying now.");
    expect(reply.toolCalls).toEqual([{ id: "call_list", name: "task_list", arguments: '{"action":"list"}' }]);
    expect(reply).toMatchObject({ finishReason: "length", cutAtBytes: BOUND, toolCallsLeftOut: 1 });
    await expect.poll(() => replies[0]!.closedEarly).toBe(true);
  });

  it("a gzip body inflating to 4 MiB of text chunks: keeps the bound's worth", async () => {
    const { baseURL, replies } = await startServer(() => gzipped(frame({ content: PIECE }).repeat(4096) + frame({}, "stop")));
    const reply = await modelOf(baseURL).complete(request);
    expect(replies[0]!.bytes).toBeLessThan(BOUND);
    expect(reply.content).toBe(KEPT_OF_FLOOD);
    expect(reply).toMatchObject({ finishReason: "length", cutAtBytes: BOUND });
  });

  it("a gzip body inflating to one 4 MiB line (a bomb): ended at the bound, the reply read so far standing", async () => {
    const bomb = `${frame({ content: "Before the bomb. " })}data: {"choices":[{"index":0,"delta":{"content":"${"x".repeat(4 * 1024 * 1024)}`;
    const { baseURL, replies } = await startServer(() => gzipped(bomb));
    const started = performance.now();
    const reply = await modelOf(baseURL).complete(request);
    expect(replies[0]!.bytes).toBeLessThan(BOUND);
    expect(reply).toMatchObject({ content: "Before the bomb. ", finishReason: "length", cutAtBytes: BOUND, toolCallsLeftOut: 0 });
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe("the openai adapter, given replies past MODEL_MAX_REPLY_BYTES without text", () => {
  it("tool calls carrying nothing but an index, without end: each counts against the bound, and the reply is cut there", async () => {
    let index = 0;
    const indexOnly = () => frame({ tool_calls: Array.from({ length: 100 }, () => ({ index: index++ })) });
    const { baseURL, replies } = await startServer(() => (res, written) => flood(res, written, "", indexOnly, `${frame({}, "tool_calls")}data: [DONE]\n\n`));
    const reply = await modelOf(baseURL).complete(request);
    // Each call counts CALL_BYTES: the bound holds BOUND / CALL_BYTES of them, each ended by the next one begun.
    expect(reply).toMatchObject({ finishReason: "length", cutAtBytes: BOUND, toolCallsLeftOut: 0 });
    expect(reply.toolCalls).toHaveLength(BOUND / CALL_BYTES);
    expect(reply.toolCalls[0]).toEqual({ id: "", name: "", arguments: "{}" });
    await expect.poll(() => replies[0]!.closedEarly).toBe(true);
    expect(replies[0]!.bytes).toBeLessThan(FLOOD);
  });

  it.each([
    ["without choices", () => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "flood-model", choices: [] })}\n\n`],
    ["of a role alone", () => frame({ role: "assistant" })],
  ])("chunks %s, without end: each counts its bytes on the wire, and the reply is cut at the bound", async (_, empty) => {
    const { baseURL, replies } = await startServer(() => (res, written) => flood(res, written, "", empty, `${frame({}, "stop")}data: [DONE]\n\n`));
    const reply = await modelOf(baseURL).complete(request);
    expect(reply).toMatchObject({ content: null, toolCalls: [], finishReason: "length", cutAtBytes: BOUND, toolCallsLeftOut: 0 });
    await expect.poll(() => replies[0]!.closedEarly).toBe(true);
    expect(replies[0]!.bytes).toBeLessThan(FLOOD);
  });

  it("an error answer whose body passes the bound is the model's error, not an empty reply", async () => {
    const { baseURL } = await startServer(() => (res) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "x".repeat(2 * BOUND), type: "invalid_request_error" } }));
    });
    await expect(modelOf(baseURL).complete(request)).rejects.toMatchObject({ name: "ModelError", status: 400 });
  });
});

describe.each(backends)("a run whose model reply passes MODEL_MAX_REPLY_BYTES, on %s", (backend) => {
  const counted = countedDeployTool();
  const deploy = counted.tool;

  async function start(answerFor: (question: string, before: number) => Answer) {
    const server = await startServer(answerFor);
    counted.reset();
    const t = closing(
      await startTestApp(backend, {
        runtime: {
          model: modelOf(server.baseURL),
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bound-")),
          extraTools: [deploy],
          approvals: { rules: { deploy: "always" } },
        },
      }),
    );
    return { t, replies: server.replies };
  }

  /** The run's model calls in order, each with its attributes read. */
  const modelCallsOf = (run: Awaited<ReturnType<typeof settled>>) =>
    run
      .trace!.spans.filter((span) => span.kind === "MODEL_CALL")
      .sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt))
      .map((span) => ({ ...span, attributes: JSON.parse(span.attributes as string) as Record<string, unknown> }));

  it("finishes with the text kept within the bound, its span saying why, charged its bound; the worker's other run is unaffected", async () => {
    const { t, replies } = await start((question) => (question === "Flood me" ? floodText : answer("A short answer.")));
    const [flooded, other] = await Promise.all([admit(t.client, { question: "Flood me" }), admit(t.client, { question: "Be brief" })]);
    const [done, calm] = await Promise.all([settled(t.client, flooded.run.id, 60_000), settled(t.client, other.run.id, 60_000)]);
    expect(done).toMatchObject({ status: "SUCCEEDED", failureReason: null, answer: KEPT_OF_FLOOD });
    expect(calm).toMatchObject({ status: "SUCCEEDED", answer: "A short answer." });
    const calls = modelCallsOf(done);
    expect(calls.map((call) => call.status)).toEqual(["OK"]);
    expect(calls[0]!.attributes).toMatchObject({
      finishReason: "length",
      usageEstimated: true,
      replyCut: { bound: "MODEL_MAX_REPLY_BYTES", bytes: BOUND, toolCallsLeftOut: 0 },
    });
    // Charged: the reply's bound, as a reply whose server reported no usage is.
    expect(calls[0]!.usage!.output).toBeGreaterThan(BOUND / 8);
    expect(replies).toHaveLength(2);
    expect(replies.filter((reply) => reply.closedEarly)).toHaveLength(1);
  });

  it("a model streaming chunks that carry nothing, without end: the run ends at the bound, as a cut reply, not at its deadline", async () => {
    const empty = () => frame({ role: "assistant" });
    // Until the connection closes: no end, no finish reason.
    const { t, replies } = await start(() => (res, written) => flood(res, written, "", empty, "", Number.POSITIVE_INFINITY));
    const { run } = await admit(t.client, { question: "Stream nothing" });
    const done = await settled(t.client, run.id, 60_000);
    const calls = modelCallsOf(done);
    expect(calls[0]!.attributes).toMatchObject({ finishReason: "length", replyCut: { bound: "MODEL_MAX_REPLY_BYTES", bytes: BOUND, toolCallsLeftOut: 0 } });
    expect(replies[0]!.closedEarly).toBe(true);
    // As any reply cut at its bound: what came within it (here nothing) is the answer.
    expect(done).toMatchObject({ status: "SUCCEEDED", failureReason: null, answer: "" });
    expect(calls.map((call) => call.status)).toEqual(["OK"]);
  });

  it("the call the bound cut is neither run nor held for approval; the whole call before it runs, and the run goes on", async () => {
    const { t, replies } = await start((_, before) => (before === 0 ? floodCall : answer("Listed, not deployed.")));
    const { run } = await admit(t.client, { question: "Deploy it" });
    const done = await settled(t.client, run.id, 60_000);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "Listed, not deployed." });
    expect(counted.calls()).toBe(0);
    expect(done.trace!.spans.flatMap((span) => span.events).filter((event) => event.kind.startsWith("APPROVAL"))).toEqual([]);
    expect(done.trace!.spans.filter((span) => span.kind === "TOOL_CALL").map((span) => span.name)).toEqual(["execute_tool task_list"]);
    const calls = modelCallsOf(done);
    expect(calls.map((call) => call.status)).toEqual(["OK", "OK"]);
    expect(calls[0]!.attributes).toMatchObject({ finishReason: "length", replyCut: { bound: "MODEL_MAX_REPLY_BYTES", bytes: BOUND, toolCallsLeftOut: 1 } });
    // The reply as logged: its text and the whole call, not the one the bound cut.
    const logged = done.messages.edges.map((edge) => edge.node).find((message) => message.role === "ASSISTANT")!;
    expect(logged.content).toBe("Deploying now.");
    expect(replies[0]!.closedEarly).toBe(true);
  });
});
