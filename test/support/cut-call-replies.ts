// A model server's replies for the cut-call tests (cut-call-ids*.test.ts): a reply whose deploy
// "staging" call streams its arguments past MODEL_MAX_REPLY_BYTES (CUT_BOUND), so the call is left
// out of the cut reply after its id and arguments streamed, and a later reply that deploys
// "production" under the same id.
import { once } from "node:events";
import type { ServerResponse } from "node:http";

/** The reply bound the tests give their model. */
export const CUT_BOUND = 64 * 1024;
const SPACES = " ".repeat(1000);

const frame = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "flood-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const toolFragment = (index: number, fragment: object) => frame({ tool_calls: [{ index, ...fragment }] });

/** A whole task_list call, then deploy "staging" whose arguments go on (spaces) until the socket closes. */
export async function floodStaging(res: ServerResponse): Promise<void> {
  const closed = once(res, "close");
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write(
    toolFragment(0, { id: "call_list", type: "function", function: { name: "task_list", arguments: '{"action":"list"}' } }) +
      toolFragment(1, { id: "call_deploy", type: "function", function: { name: "deploy", arguments: '{"target":"staging"}' } }),
  );
  for (let written = 0; written < 128 * CUT_BOUND && !res.destroyed; written += SPACES.length) {
    if (!res.write(toolFragment(1, { function: { arguments: SPACES } }))) await Promise.race([once(res, "drain"), closed]);
  }
  if (!res.destroyed) res.end(`${frame({}, "tool_calls")}data: [DONE]\n\n`);
}

/** Deploy "production", under the id the cut call streamed with. */
export function deployProduction(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const call = toolFragment(0, { id: "call_deploy", type: "function", function: { name: "deploy", arguments: '{"target":"production"}' } });
  res.end(`${call}${frame({}, "tool_calls")}data: [DONE]\n\n`);
}
