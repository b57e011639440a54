// How the OpenAI adapter reaches a real local HTTP server (model-http.ts): its requests go over
// kept-alive connections of its own rather than through the global fetch (whose machinery cost a
// turn about a quarter of a millisecond per request), and what fetch did for it still happens:
// a compressed stream is read as sent, a redirect is followed, and each event streams as soon as its
// end arrives, however the end is split.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";

const servers: Server[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

type Seen = { url: string; port: number; body: string; headers: IncomingMessage["headers"] };

async function startServer(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ baseURL: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    seen.push({ url: req.url ?? "", port: req.socket.remotePort ?? 0, body: Buffer.concat(parts).toString("utf8"), headers: req.headers });
    answer(req, res);
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

const stream = (text: string) =>
  [
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta: { content: text }, finish_reason: "stop" }] })}\n\n`,
    "data: [DONE]\n\n",
  ].join("");

const answering = (text: string) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(stream(text));
};

const model = (baseURL: string) => new OpenAIModel({ baseURL, apiKey: "sk-test", model: "gpt-test", contextWindow: 64_000, maxRetries: 0 });
const request: ModelRequest = { messages: [{ role: "user", content: "Say hello" }], tools: [] };

describe("the OpenAI adapter's HTTP", () => {
  it("sends its requests over one kept-alive connection of its own, not through the global fetch", async () => {
    const { baseURL, seen } = await startServer(answering("hello"));
    const fetching = vi.spyOn(globalThis, "fetch");
    const m = model(baseURL);
    for (let i = 0; i < 3; i += 1) expect((await m.complete(request)).content).toBe("hello");
    expect(fetching).not.toHaveBeenCalled();
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((one) => one.port)).size).toBe(1);
    // The request as the SDK made it: its path, its bearer key, its JSON body with a length.
    expect(seen[0]!.url).toBe("/v1/chat/completions");
    expect(seen[0]!.headers.authorization).toBe("Bearer sk-test");
    expect(Number(seen[0]!.headers["content-length"])).toBe(Buffer.byteLength(seen[0]!.body));
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "Say hello" }] });
  });

  it("reads a gzip-compressed stream as it was sent", async () => {
    const { baseURL } = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
      res.end(gzipSync(stream("compressed")));
    });
    expect((await model(baseURL).complete(request)).content).toBe("compressed");
  });

  it("streams an event ended by CRLF lines sent a byte at a time as soon as its end arrives, before the body ends", async () => {
    let delivered: () => void = () => {};
    const firstDelta = new Promise<void>((resolve) => (delivered = resolve));
    let seenBeforeEnd: boolean | undefined;
    const { baseURL } = await startServer(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = {
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "gpt-test",
        choices: [{ index: 0, delta: { content: "Hel" }, finish_reason: null }],
      };
      res.write(`data: ${JSON.stringify(chunk)}`);
      // Each byte of the blank line that ends the event in its own piece of the body.
      for (const byte of "\r\n\r\n") {
        await sleep(20);
        res.write(byte);
      }
      // The rest of the reply is sent only once the first delta reached the caller (or 2 s passed without it).
      seenBeforeEnd = await Promise.race([firstDelta.then(() => true), sleep(2_000).then(() => false)]);
      res.end(stream("lo").replaceAll("\n", "\r\n"));
    });
    const reply = await model(baseURL).complete(request, (event) => {
      if (event.type === "text") delivered();
    });
    expect(seenBeforeEnd).toBe(true);
    expect(reply.content).toBe("Hello");
  });

  it("follows a redirect to where the model answers, sending the request there once", async () => {
    const target = await startServer(answering("moved"));
    const { baseURL, seen } = await startServer((_req, res) => {
      res.writeHead(307, { location: `${target.baseURL}/chat/completions` });
      res.end();
    });
    expect((await model(baseURL).complete(request)).content).toBe("moved");
    expect(target.seen).toHaveLength(1);
    expect(JSON.parse(target.seen[0]!.body)).toMatchObject({ model: "gpt-test" });
    expect(seen.length).toBeGreaterThanOrEqual(1);
  });
});
