// The scripted model of the multi-process tests: for each question it first calls the marker
// tool, then — once it sees that call's result or its repair note — answers
// `Finished "<question>" by <pid>.` — with ` after "<question>"` naming the previous run's
// question when the request carried that run's answer — so a test can tell which process answered
// which question, on which history. With `echoToolResult`, the answer ends with ` Tool said: <the
// tool message the request carried>`, so a test reads what the model was actually given.
// Only the messages since the run's question count: earlier runs of the conversation came before it.
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";

export function markerModel(name: string, toolName: string, options: { streamMs?: number; echoToolResult?: boolean } = {}): ScriptedModel {
  return new ScriptedModel({
    name,
    recordRequests: false,
    steps: (request) => {
      const asked = request.messages.findLastIndex((m) => m.role === "user");
      const question = String(request.messages[asked]?.content ?? "");
      const result = request.messages.slice(asked).find((m) => m.role === "tool");
      if (!result) return { toolCalls: [{ name: toolName, arguments: {} }] };
      // What the request showed of the conversation's previous run: its final answer's question.
      const previous = request.messages
        .slice(0, asked)
        .flatMap((m) => (m.role === "assistant" && typeof m.content === "string" ? [/^Finished "(.*)" by \d+/.exec(m.content)?.[1]] : []))
        .filter(Boolean)
        .at(-1);
      const echo = options.echoToolResult ? ` Tool said: ${String(result.content)}` : "";
      return { content: `Finished "${question}" by ${process.pid}${previous ? ` after "${previous}"` : ""}.${echo}`, streamMs: options.streamMs };
    },
  });
}
