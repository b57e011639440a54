// R7: dangling tool-call repair. A process that dies between persisting an assistant's tool calls
// and persisting their results leaves calls without results; chat-completions servers reject such a
// request. Repair happens in the model's view (read time, R4) with a neutral note, because we cannot
// know whether the call ran: the note must not claim either outcome.
import type { ChatMessage, ToolCall } from "../ports/model.js";

/** A dangling call and the index of the assistant message that made it. */
type Located = { call: ToolCall; assistantIndex: number };

/**
 * Pairs each tool message with the nearest earlier unanswered call of the same id, and returns the
 * calls left unanswered, in log order. Pairing one result with one call (rather than "any result with
 * this id exists") keeps a reused id from hiding a dangling call.
 */
function locateDangling(messages: readonly ChatMessage[]): Located[] {
  const open: (Located & { answered: boolean })[] = [];
  messages.forEach((message, index) => {
    if (message.role === "assistant") {
      for (const call of message.toolCalls ?? []) open.push({ call, assistantIndex: index, answered: false });
    } else if (message.role === "tool") {
      const match = open.findLast((entry) => !entry.answered && entry.call.id === message.toolCallId);
      if (match) match.answered = true;
    }
  });
  return open.filter((entry) => !entry.answered).map(({ call, assistantIndex }) => ({ call, assistantIndex }));
}

/** Assistant tool calls with no later tool message carrying their id, in log order. */
export function findDanglingToolCalls(messages: readonly ChatMessage[]): ToolCall[] {
  return locateDangling(messages).map((entry) => entry.call);
}

/** The neutral note the model sees in place of a result that was never recorded. */
export function repairNote(call: ToolCall): string {
  return (
    `[result unavailable: the run was interrupted before the result of tool "${call.name}" ` +
    `(call ${call.id}) was recorded. The call may or may not have executed; do not assume either.]`
  );
}

/** Index of the first non-tool message after `assistantIndex`: where that turn's results end. */
function endOfResults(messages: readonly ChatMessage[], assistantIndex: number): number {
  let index = assistantIndex + 1;
  while (index < messages.length && messages[index]?.role === "tool") index += 1;
  return index;
}

/**
 * The messages with a repair note for each dangling call, inserted after the assistant message that
 * made it and after the results that turn does have, in the order the calls were made. The input is
 * not modified; `repaired` lists the calls that got a note (empty when nothing was dangling), so the
 * caller can record the repair in the log (R7).
 */
export function withRepairs(messages: readonly ChatMessage[]): { messages: ChatMessage[]; repaired: ToolCall[] } {
  const dangling = locateDangling(messages);
  if (dangling.length === 0) return { messages: [...messages], repaired: [] };

  // Each turn's results end before a distinct non-tool message (or at the end), so insertion points
  // of different turns never coincide; within a turn, `dangling` is already in call order.
  const notesAt = new Map<number, ChatMessage[]>();
  for (const { call, assistantIndex } of dangling) {
    const at = endOfResults(messages, assistantIndex);
    const notes = notesAt.get(at) ?? [];
    notes.push({ role: "tool", toolCallId: call.id, content: repairNote(call) });
    notesAt.set(at, notes);
  }

  const repairedMessages: ChatMessage[] = [];
  for (let index = 0; index <= messages.length; index += 1) {
    repairedMessages.push(...(notesAt.get(index) ?? []));
    const message = messages[index];
    if (message) repairedMessages.push(message);
  }
  return { messages: repairedMessages, repaired: dangling.map((entry) => entry.call) };
}

/** The calls of the turn whose results are being read, and which of them have one. */
type OpenTurn = { assistantIndex: number; callIds: Set<string>; answered: Set<string> };

function missingResults(turn: OpenTurn): string[] {
  return [...turn.callIds]
    .filter((id) => !turn.answered.has(id))
    .map((id) => `message ${turn.assistantIndex}: tool call ${id} has no result before the next non-tool message`);
}

function checkToolMessage(turn: OpenTurn | null, toolCallId: string, index: number): string | null {
  if (!turn?.callIds.has(toolCallId)) {
    return `message ${index}: tool result for ${toolCallId} without a preceding call`;
  }
  if (turn.answered.has(toolCallId)) return `message ${index}: duplicate tool result for ${toolCallId}`;
  turn.answered.add(toolCallId);
  return null;
}

/**
 * Chat-completions protocol violations, one line each: a tool message must answer a call of the
 * assistant message directly before its run of tool messages, exactly once, and every call must be
 * answered before the next non-tool message (or the end). [] means the list can be sent as is.
 */
export function validateProtocol(messages: readonly ChatMessage[]): string[] {
  const violations: string[] = [];
  let turn: OpenTurn | null = null;
  for (const [index, message] of messages.entries()) {
    if (message.role === "tool") {
      const violation = checkToolMessage(turn, message.toolCallId, index);
      if (violation) violations.push(violation);
      continue;
    }
    if (turn) violations.push(...missingResults(turn));
    turn = null;
    if (message.role === "assistant" && message.toolCalls && message.toolCalls.length > 0) {
      turn = { assistantIndex: index, callIds: new Set(), answered: new Set() };
      for (const call of message.toolCalls) {
        if (turn.callIds.has(call.id)) violations.push(`message ${index}: duplicate tool call id ${call.id}`);
        turn.callIds.add(call.id);
      }
    }
  }
  if (turn) violations.push(...missingResults(turn));
  return violations;
}
