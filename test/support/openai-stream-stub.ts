// A real HTTP server speaking the OpenAI chat-completions streaming protocol, paced as a model
// would be: tool calls with their argument text in fragments, then answers a piece at a time,
// optionally pausing at a piece until a test lets it go on. Records when it wrote each piece, so
// tests and benches can measure against the stub's own timing.
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type StubToolCall = { id: string; name: string; fragments: string[] };

/**
 * How a reply is cut off after its pieces: the connection closed mid-body ("socket": a server
 * restarting, a proxy dropping the connection), the body ended without a finish reason or [DONE]
 * ("end"), an `error` event in the body (as servers report a failure once they have answered 200),
 * or nothing more at all with the connection left open ("silent": a server that hangs, a half-open link).
 */
export type StubCut = "socket" | "end" | "silent" | { error: { message: string; type?: string; code?: string | number } };

export type StubTurn =
  | { toolCalls: StubToolCall[]; cut?: StubCut }
  /** Refuses the request with this HTTP status (e.g. 429 with Retry-After), as an OpenAI error body. */
  | { refuse: number; headers?: Record<string, string> }
  | {
      text: string[];
      /** Milliseconds between pieces. */
      gapMs?: number;
      /** Writes nothing from piece `index` on until `until` resolves (several: each in turn). */
      pause?: { index: number; until: Promise<void> } | { index: number; until: Promise<void> }[];
      /** Called as each piece is written, with performance.now(). */
      sent?: (index: number, at: number) => void;
      cut?: StubCut;
      /** Reports the usage after each piece (as some servers do), not only at the end. */
      usageEach?: boolean;
      /** Fields each piece's chunk carries besides (or in place of) its own: a padded model name, unknown fields, more choices. */
      fields?: (index: number, piece: string) => object;
      /** The usage reports at the end, each a chunk of its own, in place of the usual one. */
      usage?: object[];
    };

export type ChatBody = { model: string; messages: { role: string; content?: string | null; tool_call_id?: string }[] };

export type OpenAIStreamStub = { baseURL: string; close(): Promise<void> };

const chunk = (delta: object, finish: string | null = null, fields: object = {}) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "stub-model", choices: [{ index: 0, delta, finish_reason: finish }], ...fields })}\n\n`;
const usageOf = (reported: object) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "stub-model", choices: [], usage: reported })}\n\n`;
const usage = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "stub-model", choices: [], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 } })}\n\n`;

/** Starts the stub; `turnFor` chooses what each request is answered with. */
export async function startOpenAIStreamStub(turnFor: (body: ChatBody) => StubTurn): Promise<OpenAIStreamStub> {
  const server: Server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const turn = turnFor(JSON.parse(Buffer.concat(parts).toString("utf8")) as ChatBody);
    if ("refuse" in turn) {
      res.writeHead(turn.refuse, { "content-type": "application/json", ...turn.headers });
      res.end(JSON.stringify({ error: { message: `refused with ${turn.refuse}`, type: "rate_limit_error", code: "rate_limit_exceeded" } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    if ("toolCalls" in turn) writeToolCalls(res, turn.toolCalls, turn.cut === undefined);
    else {
      for (const [index, piece] of turn.text.entries()) {
        const pause = [turn.pause ?? []].flat().find((each) => each.index === index);
        if (pause) await pause.until;
        else if (index > 0 && turn.gapMs) await new Promise((resolve) => setTimeout(resolve, turn.gapMs));
        if (res.destroyed) return;
        res.write(chunk({ content: piece }, null, turn.fields?.(index, piece)));
        if (turn.usageEach) res.write(usage);
        turn.sent?.(index, performance.now());
      }
      if (!turn.cut) res.write(chunk({}, "stop"));
    }
    if (turn.cut) return cut(res, turn.cut);
    if ("text" in turn && turn.usage) for (const reported of turn.usage) res.write(usageOf(reported));
    else res.write(usage);
    res.end("data: [DONE]\n\n");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Ends the reply early, as `how` says, once what was written has gone out. */
async function cut(res: ServerResponse, how: StubCut): Promise<void> {
  if (typeof how === "object") {
    res.end(`event: error\ndata: ${JSON.stringify({ error: how.error })}\n\n`);
    return;
  }
  await new Promise((resolve) => res.write(": cut\n\n", resolve));
  if (how === "silent") return;
  if (how === "end") res.end();
  else res.socket?.destroy();
}

/** The calls' fragments interleaved (first of each, second of each, …), ids and names in each call's first; then the finish, unless `finish` is false. */
function writeToolCalls(res: ServerResponse, calls: StubToolCall[], finish: boolean): void {
  const rounds = Math.max(...calls.map((call) => call.fragments.length));
  for (let round = 0; round < rounds; round += 1) {
    calls.forEach((call, index) => {
      const fragment = call.fragments[round];
      if (fragment === undefined) return;
      const head = round === 0 ? { id: call.id, type: "function", function: { name: call.name, arguments: fragment } } : { function: { arguments: fragment } };
      res.write(chunk({ tool_calls: [{ index, ...head }] }));
    });
  }
  if (finish) res.write(chunk({}, "tool_calls"));
}
