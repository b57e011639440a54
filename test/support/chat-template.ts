// The role order a strict chat template accepts, written independently of the runtime so that a
// test can hold the runtime's requests to it. Templates that enforce alternation (Mistral's,
// Gemma's, Llama 2's) and APIs with the same rule (Anthropic's: tool results are the user's side)
// agree on what is checked here:
// - a system message only as the first message;
// - then a user message first, and user and assistant turns alternating: never two user messages
//   in a row, never an assistant reply right after another;
// - tool messages only right after an assistant message with tool calls, answering each of its
//   calls exactly once before anything else; after them, the assistant's next message;
// - the request ends with a user message or tool results: the model speaks next.

type Message = { role: string; content?: string | null; toolCalls?: { id: string }[]; toolCallId?: string };

/** What the template would reject, one line each; [] means it renders the request. */
export function chatTemplateViolations(messages: readonly Message[]): string[] {
  const violations: string[] = [];
  // What may come next: "user" (after system or a reply), "assistant" (after a user message or
  // complete tool results), "tools" (results still owed to the open calls).
  let expecting: "user" | "assistant" | "tools" = "user";
  let owed = new Set<string>();
  for (const [index, message] of messages.entries()) {
    const at = `message ${index} (${message.role})`;
    if (message.role === "system") {
      if (index !== 0) violations.push(`${at}: a system message only comes first`);
      continue;
    }
    if (expecting === "tools" && message.role !== "tool") {
      violations.push(`${at}: tool calls ${[...owed].join(", ")} are not answered`);
      expecting = "assistant";
    }
    switch (message.role) {
      case "user":
        if (expecting !== "user") violations.push(`${at}: a user message where the assistant must speak`);
        expecting = "assistant";
        break;
      case "assistant": {
        if (expecting !== "assistant") violations.push(`${at}: an assistant message where the user must speak`);
        const calls = (message.toolCalls ?? []).map((call) => call.id);
        owed = new Set(calls);
        if (owed.size !== calls.length) violations.push(`${at}: a tool call id used twice`);
        expecting = owed.size > 0 ? "tools" : "user";
        break;
      }
      case "tool":
        if (!owed.has(message.toolCallId ?? "")) violations.push(`${at}: a result for ${message.toolCallId}, which no open call asked for`);
        owed.delete(message.toolCallId ?? "");
        if (owed.size === 0) expecting = "assistant";
        break;
      default:
        violations.push(`${at}: an unknown role`);
    }
  }
  if (expecting === "tools") violations.push(`end: tool calls ${[...owed].join(", ")} are not answered`);
  else if (expecting === "user" && messages.some((message) => message.role !== "system")) violations.push("end: the request ends with the assistant's reply");
  if (!messages.some((message) => message.role === "user")) violations.push("no user message");
  return violations;
}
