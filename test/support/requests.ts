// Reading a model request as a test's scripted model sees it. A request holds a run's context
// (`<workspace-context>`) and a summary of earlier turns (`<system-reminder>`) in the same user
// message as the question that follows them (src/runtime/memory/request-turns.ts).
import type { ChatMessage } from "../../src/runtime/ports/model.js";

/** The question a user message asks: its text after the last context or summary block. */
export function questionOf(content: string | null): string {
  const text = content ?? "";
  const end = Math.max(...["</workspace-context>", "</system-reminder>"].map((tag) => (text.includes(tag) ? text.lastIndexOf(tag) + tag.length : 0)));
  return text.slice(end).replace(/^\n\n/, "");
}

/** Whether the message is a user message asking this question. */
export const asks = (message: ChatMessage, question: string) => message.role === "user" && questionOf(message.content) === question;
