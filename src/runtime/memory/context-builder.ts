// Builds the messages of one model request from the conversation's log (R4): everything is
// decided at read time, nothing in the log is changed. The result says which log entries the
// request carries verbatim, so that callers can tell what content the model actually received
// (the consumption ledger, W8).
import type { Message } from "../../generated/prisma/client.js";
import type { ChatMessage, ToolSchema } from "../ports/model.js";
import { type BudgetBreakdown, computeBudget } from "./budget.js";
import { toChatMessages } from "./conversation-log.js";

export type ContextInput = {
  systemPrompt: string;
  /** The conversation's whole log, in order. */
  log: readonly Message[];
  tools: readonly ToolSchema[];
  contextWindow: number;
};

export type BuiltContext = {
  messages: ChatMessage[];
  budget: BudgetBreakdown;
  /** Ids of the log messages whose content the request carries unchanged. */
  carried: ReadonlySet<string>;
};

export function buildContext(input: ContextInput): BuiltContext {
  const history = toChatMessages(input.log);
  const messages: ChatMessage[] = [{ role: "system", content: input.systemPrompt }, ...history];
  const budget = computeBudget({
    contextWindow: input.contextWindow,
    systemPrompt: input.systemPrompt,
    tools: input.tools,
    currentInput: [],
    history,
  });
  return { messages, budget, carried: new Set(input.log.map((message) => message.id)) };
}
