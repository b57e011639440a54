// The offline demo's model, composed when no model server is configured: the scripted engine
// (scripted-model.ts) with a script that answers every run of the demo server plainly labelled.
import type { ChatMessage } from "../ports/model.js";
import { ScriptedModel } from "./scripted-model.js";

/**
 * The offline demo's model. It decides from the conversation, not from a step counter, because one
 * instance answers every run of the demo server: it adds a task with `task_list` once per user turn
 * when that tool is offered, then gives a final answer that says plainly it is scripted.
 */
export function createDemoModel(): ScriptedModel {
  return new ScriptedModel({
    name: "demo",
    recordRequests: false,
    steps: (request) => {
      const offersTaskList = request.tools.some((tool) => tool.name === "task_list");
      if (offersTaskList && !calledToolSinceLastUserMessage(request.messages, "task_list")) {
        return { content: null, toolCalls: [{ name: "task_list", arguments: { action: "add", title: "Answer the question" } }] };
      }
      return { content: demoAnswer(lastUserMessage(request.messages)) };
    },
  });
}

function demoAnswer(question: string | undefined): string {
  const quoted = question === undefined ? "(no user message)" : `"${truncate(question, 500)}"`;
  return [
    "This is a scripted offline demo reply, not an answer from a language model.",
    `You asked: ${quoted}`,
    "Configure a model server to get real answers.",
  ].join("\n\n");
}

function lastUserMessage(messages: ChatMessage[]): string | undefined {
  return messages.findLast((message) => message.role === "user")?.content;
}

function calledToolSinceLastUserMessage(messages: ChatMessage[], toolName: string): boolean {
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  return messages.slice(lastUser + 1).some((message) => message.role === "assistant" && (message.toolCalls ?? []).some((call) => call.name === toolName));
}

function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max).join("")}…`;
}
