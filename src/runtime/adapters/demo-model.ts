// The offline demo's model, composed when no model server is configured: the scripted engine
// (scripted-model.ts) with a script that answers every run of the demo server plainly labelled.
import type { ChatMessage, ModelRequest } from "../ports/model.js";
import { type ScriptStep, ScriptedModel } from "./scripted-model.js";

/** The first line of every demo answer, so no one mistakes it for a model's. */
export const DEMO_LABEL = "[Dossier offline demo] This is a scripted offline demo reply, not an answer from a language model.";

/**
 * The offline demo's model. It decides from the conversation, not from a step counter, because one
 * instance answers every run of the demo server. Once per question it adds a task with `task_list`
 * and, when the run was given materials, reads the first with `read_material` (each when offered);
 * then it answers: its label, the question quoted, the opening of the run's context and what it
 * read (when it had them), and how to get real answers.
 */
export function createDemoModel(): ScriptedModel {
  return new ScriptedModel({ name: "demo", recordRequests: false, steps: demoStep });
}

function demoStep(request: ModelRequest): ScriptStep {
  const asked = request.messages.findLastIndex((message) => message.role === "user");
  const input = asked < 0 ? "" : (request.messages[asked]!.content ?? "");
  const since = request.messages.slice(asked + 1);
  const offered = new Set(request.tools.map((tool) => tool.name));
  const material = selectedMaterials(input)[0];
  const calls: NonNullable<ScriptStep["toolCalls"]> = [];
  if (offered.has("task_list") && !calledTool(since, "task_list"))
    calls.push({ name: "task_list", arguments: { action: "add", title: "Answer the question" } });
  if (material && offered.has("read_material") && !calledTool(since, "read_material")) {
    calls.push({ name: "read_material", arguments: { publicationId: material.publicationId, version: material.version } });
  }
  if (calls.length > 0) return { content: null, toolCalls: calls };
  // Streamed over half a second, so that a new user watching runOutput sees an answer arrive.
  return { content: demoAnswer(input, material && readResult(since)), streamMs: 500 };
}

function demoAnswer(input: string, read: string | undefined): string {
  const question = questionOf(input);
  const quoted = question === "" ? "(no question)" : `"${truncate(question, 500)}"`;
  const context = contextOf(input)?.split("\n")[1];
  return [
    DEMO_LABEL,
    `You asked: ${quoted}`,
    ...(context ? [`The run was given its workspace context, which begins: ${truncate(context, 300)}`] : []),
    ...(read ? [read] : []),
    "To have a language model answer, set OPENAI_API_KEY (and OPENAI_BASE_URL for any OpenAI-compatible server) and restart Dossier.",
  ].join("\n\n");
}

/**
 * The question in the last user message: what follows the last context block. A request holds the
 * run's context (`<workspace-context>`) and a summary (`<system-reminder>`) in the same user
 * message as the question, before it (memory/request-turns.ts).
 */
export function questionOf(input: string): string {
  const ends = ["</workspace-context>", "</system-reminder>"].map((tag) => {
    const at = input.lastIndexOf(tag);
    return at < 0 ? 0 : at + tag.length;
  });
  return input.slice(Math.max(...ends)).trim();
}

type Material = { title: string; publicationId: string; version: number };

/** The last workspace context in the message (workspace/workspace-context.ts), if any. */
function contextOf(input: string): string | undefined {
  const start = input.lastIndexOf("<workspace-context>");
  return start < 0 ? undefined : input.slice(start, input.indexOf("</workspace-context>", start));
}

/** The materials the run's context lists as selected for it, in order. */
function selectedMaterials(input: string): Material[] {
  const context = contextOf(input);
  if (context === undefined) return [];
  const listed = context.split("Materials selected for this run")[1]?.split("\n\n")[0] ?? "";
  return [...listed.matchAll(/^- "(.*)" publicationId=(\S+) version (\d+)/gm)].map((m) => ({ title: m[1]!, publicationId: m[2]!, version: Number(m[3]) }));
}

/** What the demo says about its read_material call: the opening of the material, or why it could not read it. */
function readResult(since: ChatMessage[]): string | undefined {
  const call = since.flatMap((message) => (message.role === "assistant" ? (message.toolCalls ?? []) : [])).find((c) => c.name === "read_material");
  const result = since.find((message) => message.role === "tool" && message.toolCallId === call?.id)?.content;
  if (result === undefined || result === null) return undefined;
  const material = /^<material title="(.*?)" publicationId="[^"]*" version="(\d+)" as-of="([^"]*)"/.exec(result);
  if (!material) return `I tried to read the first material with read_material; it answered: ${truncate(result.replace(/\s+/g, " "), 300)}`;
  const body = result
    .split("\n")
    .slice(1)
    .filter((line) => !/^This (is a judgement|part holds)/.test(line) && line !== "</material>")
    .join(" ");
  return `I read "${material[1]}" (version ${material[2]}, as of ${material[3]}) with read_material. It begins: "${truncate(body.replace(/\s+/g, " ").trim(), 300)}"`;
}

function calledTool(messages: ChatMessage[], toolName: string): boolean {
  return messages.some((message) => message.role === "assistant" && (message.toolCalls ?? []).some((call) => call.name === toolName));
}

function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max).join("")}…`;
}
