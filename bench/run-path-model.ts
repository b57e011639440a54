// The model server of bench/run-path.ts: a local server speaking the OpenAI streaming protocol
// that answers at once. Each run's question carries a mark (question()) saying how many turns of
// how many instant task_list calls it asks for; the server notes when each request arrived and
// when each answer's last byte (and the final answer's first chunk) was written, per run.
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What a run asks of the model, written into its question: `[run-path <key> <tool turns> <calls per turn>]`. */
const MARK = /\[run-path (\S+) (\d+) (\d+)\]/;
export type Timeline = { requests: number[]; answered: number[]; firstChunk?: number };
export const timelines = new Map<string, Timeline>();
/** Answers are held until this resolves (first token: the subscriber listens first). */
let hold: Promise<void> | undefined;

/** Holds the final answers until `until` resolves; undefined answers at once again. */
export function holdAnswers(until: Promise<void> | undefined): void {
  hold = until;
}

let keys = 0;
/** A question asking for `toolTurns` turns of `calls` task_list calls, and the key its timeline is noted under. */
export const question = (toolTurns: number, calls: number) => {
  const key = `k${(keys += 1)}`;
  return { key, text: `Plan the week. [run-path ${key} ${toolTurns} ${calls}]` };
};

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "bench-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "bench-model", choices: [], usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 } })}\n\n`;

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const arrived = performance.now();
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { messages: { role: string; content?: unknown }[] };
  const mark = body.messages.map((m) => (typeof m.content === "string" ? MARK.exec(m.content) : null)).find(Boolean);
  if (!mark) throw new Error("a request without its run's mark");
  const [, key, toolTurns, calls] = mark;
  const timeline = timelines.get(key!) ?? { requests: [], answered: [] };
  timelines.set(key!, timeline);
  timeline.requests.push(arrived);
  const turn = body.messages.filter((m) => m.role === "assistant").length;
  res.writeHead(200, { "content-type": "text/event-stream" });
  if (turn < Number(toolTurns)) {
    for (let i = 0; i < Number(calls); i += 1) {
      const args = JSON.stringify({ action: "add", title: `task ${turn}.${i}` });
      res.write(chunk({ tool_calls: [{ index: i, id: `call_${turn}_${i}`, type: "function", function: { name: "task_list", arguments: args } }] }));
    }
    res.write(chunk({}, "tool_calls"));
  } else {
    if (hold) await hold;
    res.write(chunk({ content: "Done" }));
    timeline.firstChunk = performance.now();
    res.write(chunk({ content: "." }));
    res.write(chunk({}, "stop"));
  }
  res.write(usage);
  res.end("data: [DONE]\n\n", () => timeline.answered.push(performance.now()));
}
export async function startModelServer(): Promise<{ baseURL: string; close(): Promise<void> }> {
  const server = createServer((req, res) =>
    answer(req, res).catch((error: unknown) => {
      console.error(`model server: ${String(error)}`);
      res.destroy();
    }),
  );
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => new Promise((r) => server.close(() => r())) };
}
