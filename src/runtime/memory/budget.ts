// R8: the dynamic history budget. Computed at read time (R4) for each model request, from the parts
// the request is built from; the breakdown is recorded on every model-request span, so its field
// names are a stable contract with traces (T) — add fields, never rename them.
import type { ChatMessage, ToolSchema } from "../ports/model.js";
import { localEstimator, type TokenEstimator } from "./token-estimator.js";

export const DEFAULT_RESERVED_OUTPUT = 8_000;
export const DEFAULT_SAFETY_BUFFER = 3_000;
export const DEFAULT_TRIGGER_RATIO = 0.9;

export type BudgetInput = {
  /** The model's context window in tokens (ModelPort.contextWindow). */
  contextWindow: number;
  /** Tokens kept free for the model's answer. Default 8,000. */
  reservedOutput?: number;
  /** Tokens kept free for the estimator's error and framing we do not model. Default 3,000. */
  safetyBuffer?: number;
  /** Compress when the estimate exceeds this share of the effective window. Default 0.9. */
  triggerRatio?: number;
  /** The system prompt; "" when the request carries none. */
  systemPrompt: string;
  /** The tool schemas offered with the request. */
  tools: readonly ToolSchema[];
  /** The messages of the current round (the new user input); never compressed. */
  currentInput: readonly ChatMessage[];
  /** The earlier messages, as the model will see them (after micro-compaction, if any). */
  history: readonly ChatMessage[];
  /** The structured-summary message (R6), when one is injected. */
  summary?: ChatMessage | null;
  /** Defaults to the local estimator (R9). */
  estimator?: TokenEstimator;
};

/** The budget breakdown of one model request. All figures are tokens. */
export type BudgetBreakdown = {
  contextWindow: number;
  reservedOutput: number;
  safetyBuffer: number;
  /** contextWindow − reservedOutput − safetyBuffer: what the request itself may use. */
  effectiveWindow: number;
  /** The system prompt (as a system message), counted into fixedOverhead. */
  systemPromptTokens: number;
  /** The tool schemas, counted into fixedOverhead. */
  toolSchemaTokens: number;
  /** The current input, counted into fixedOverhead. */
  currentInputTokens: number;
  /** systemPromptTokens + toolSchemaTokens + currentInputTokens: what cannot be compressed. */
  fixedOverhead: number;
  /** effectiveWindow − fixedOverhead: room for history and summary. Negative when the fixed part alone overflows. */
  historyBudget: number;
  /** The history messages. */
  historyTokens: number;
  /** The summary message; 0 without one. */
  summaryTokens: number;
  /** fixedOverhead + historyTokens + summaryTokens: the whole request. */
  estimate: number;
  /** ⌊effectiveWindow × triggerRatio⌋: above it, history is compressed (R5, R6). */
  trigger: number;
  /** estimate > trigger: compression should run before this request is sent. */
  overTrigger: boolean;
  /** estimate > effectiveWindow: the request does not fit even with the safety buffer. */
  overBudget: boolean;
};

function requireTokenCount(name: string, value: number, minimum: number): void {
  if (!Number.isInteger(value) || value < minimum) {
    throw new RangeError(`${name} must be an integer ≥ ${minimum}, got ${value}`);
  }
}

/** Throws RangeError unless the window parameters describe a usable budget. */
function validate(contextWindow: number, reservedOutput: number, safetyBuffer: number, triggerRatio: number): void {
  requireTokenCount("contextWindow", contextWindow, 1);
  requireTokenCount("reservedOutput", reservedOutput, 0);
  requireTokenCount("safetyBuffer", safetyBuffer, 0);
  if (!(triggerRatio > 0 && triggerRatio <= 1)) {
    throw new RangeError(`triggerRatio must be in (0, 1], got ${triggerRatio}`);
  }
  if (contextWindow <= reservedOutput + safetyBuffer) {
    throw new RangeError(`contextWindow ${contextWindow} is too small to hold reservedOutput ${reservedOutput} + safetyBuffer ${safetyBuffer}`);
  }
}

/** R8: the budget breakdown of a model request about to be built. Pure; throws RangeError on bad parameters. */
export function computeBudget(input: BudgetInput): BudgetBreakdown {
  const {
    contextWindow,
    reservedOutput = DEFAULT_RESERVED_OUTPUT,
    safetyBuffer = DEFAULT_SAFETY_BUFFER,
    triggerRatio = DEFAULT_TRIGGER_RATIO,
    estimator = localEstimator,
  } = input;
  validate(contextWindow, reservedOutput, safetyBuffer, triggerRatio);

  const effectiveWindow = contextWindow - reservedOutput - safetyBuffer;
  // The system prompt travels as a system message, so it pays the per-message framing too.
  const systemPromptTokens = input.systemPrompt === "" ? 0 : estimator.messages([{ role: "system", content: input.systemPrompt }]);
  const toolSchemaTokens = estimator.tools(input.tools);
  const currentInputTokens = estimator.messages(input.currentInput);
  const fixedOverhead = systemPromptTokens + toolSchemaTokens + currentInputTokens;
  const historyTokens = estimator.messages(input.history);
  const summaryTokens = input.summary ? estimator.messages([input.summary]) : 0;
  const estimate = fixedOverhead + historyTokens + summaryTokens;
  // Whole tokens for the span; the tiny epsilon keeps e.g. 90 × 0.7 = 62.999… from losing a token.
  const trigger = Math.floor(effectiveWindow * triggerRatio + 1e-6);

  return {
    contextWindow,
    reservedOutput,
    safetyBuffer,
    effectiveWindow,
    systemPromptTokens,
    toolSchemaTokens,
    currentInputTokens,
    fixedOverhead,
    historyBudget: effectiveWindow - fixedOverhead,
    historyTokens,
    summaryTokens,
    estimate,
    trigger,
    overTrigger: estimate > trigger,
    overBudget: estimate > effectiveWindow,
  };
}
