// The role order of a request. Strict chat templates accept a conversation only when, after an
// optional system message, user and assistant turns alternate, tool results following the
// assistant message that asked for them. The log does not always read so: a run's question and the
// context it was given are two entries, a summary is a user message before what follows it, and a
// run that ended without an answer leaves its question, or its tool results, right before the next
// run's question. How the request reads is decided when it is built (R4), the log unchanged:
// - a run's context comes right before its question, so the question is the last thing read;
// - user messages in a row become one (joinUserMessages), which the span records as its parts;
// - a user message right after tool results gets a neutral assistant note before it (another one
//   when it is a person's steering input, which arrives while the run works, not after it ended).
import { joinUserMessages } from "../../domain/trace/recorded-request.js";
import type { ChatMessage } from "../ports/model.js";
import { shownToModel } from "./conversation-log.js";

/** Which log entries a user message renders: a run's question, the context the run was given, or a person's steering input (steerRun). */
export type InputKind = "question" | "context" | "steer";

/** What the model reads where a run stopped after tool results and the next message is a user's. */
export const NO_ANSWER_NOTE = "[no answer: the run ended here, before the model replied to the results above.]";

/** What the model reads where a person's steering input follows tool results of the same run. */
export const STEERED_NOTE = "[results received; the user sent the message below while the work was in progress.]";

/**
 * The request's messages in an order strict templates accept, each shown safely (shownToModel).
 * `kinds` names the messages that are a run's question or context (by identity); `joined` maps
 * each joined message to the messages it holds, as they were shown.
 */
export function inTurns(
  messages: readonly ChatMessage[],
  kinds: ReadonlyMap<ChatMessage, InputKind>,
): { messages: ChatMessage[]; joined: Map<ChatMessage, ChatMessage[]> } {
  const ordered = contextFirst(messages, kinds);
  // shownToModel maps message for message: `ordered[index]` is what `shown[index]` shows.
  const shown = shownToModel(ordered);
  const out: ChatMessage[] = [];
  const joined = new Map<ChatMessage, ChatMessage[]>();
  let users: ChatMessage[] = [];
  const flush = () => {
    if (users.length > 1) {
      const message = joinUserMessages(users);
      joined.set(message, users);
      out.push(message);
    } else out.push(...users);
    users = [];
  };
  for (const [index, message] of shown.entries()) {
    if (message.role === "user") {
      const note = kinds.get(ordered[index]!) === "steer" ? STEERED_NOTE : NO_ANSWER_NOTE;
      if (users.length === 0 && out.at(-1)?.role === "tool") out.push({ role: "assistant", content: note });
      users.push(message);
      continue;
    }
    flush();
    out.push(message);
  }
  flush();
  return { messages: out, joined };
}

/** Each run's context moved before its question, which the log holds first (it is appended when the run is claimed). */
function contextFirst(messages: readonly ChatMessage[], kinds: ReadonlyMap<ChatMessage, InputKind>): ChatMessage[] {
  const ordered = [...messages];
  for (let index = 1; index < ordered.length; index += 1) {
    if (kinds.get(ordered[index]!) === "context" && kinds.get(ordered[index - 1]!) === "question") {
      [ordered[index - 1], ordered[index]] = [ordered[index]!, ordered[index - 1]!];
    }
  }
  return ordered;
}
