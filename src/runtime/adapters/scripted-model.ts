// A deterministic ModelPort for tests and the offline demo (demo-model.ts): it answers from a script
// instead of a model server, and labels itself "scripted:<name>" so no one mistakes its output for a model's.
import type { ChatMessage, ModelPort, ModelRequest, ModelResponse, ModelStreamEvent, TokenUsage, ToolCall } from "../ports/model.js";
import { isSummaryRequest } from "../memory/summary.js";
import { scriptedSummaryAnswer } from "./scripted-summarizer.js";

export type ScriptStep = {
  /** The reply text; null or absent when the step only calls tools. */
  content?: string | null;
  /**
   * Tool calls to ask for. `arguments` is JSON-encoded, except that a string is used verbatim as the
   * argument text, so a script can send malformed JSON to test how the runtime copes. `id`
   * replaces the call's generated id (a script can repeat or omit ids, as some servers do).
   */
  toolCalls?: { name: string; arguments: unknown; id?: string }[];
  /** Overrides the estimated usage, figure by figure. */
  usage?: Partial<TokenUsage>;
  /** Waits this long before streaming anything (time to first token); the signal can abort it. */
  delayMs?: number;
  /**
   * Streams the text word by word, spread over this long, as a model would (the offline demo, so a
   * new user sees output arrive); without it the text comes in three pieces at once.
   */
  streamMs?: number;
};

export type ScriptedModelOptions = {
  name: string;
  contextWindow?: number;
  /** A fixed list (one per call, in call order), or a function choosing each step from the request. */
  steps: ScriptStep[] | ((request: ModelRequest, stepIndex: number) => ScriptStep);
  /** Keep a copy of every request in `requests` (default true); off for long-lived instances. */
  recordRequests?: boolean;
  /**
   * Answers history-summarisation requests (R6), which never take a step of the script. Default: a
   * deterministic merge-update (scripted-summarizer.ts).
   */
  summarize?: (request: ModelRequest, index: number) => ScriptStep;
};

export const NO_MORE_STEPS_REPLY = "(scripted model: no more steps)";

export class ScriptedModel implements ModelPort {
  readonly label: string;
  readonly model: string;
  readonly scripted = true;
  readonly contextWindow: number;
  /** Every request received, in order, copied at call time (without the signal). */
  readonly requests: ModelRequest[] = [];
  /** Every summarisation request received, in order (they are not in `requests`). */
  readonly summaryRequests: ModelRequest[] = [];
  private readonly steps: ScriptedModelOptions["steps"];
  private readonly summarize: NonNullable<ScriptedModelOptions["summarize"]>;
  private readonly recordRequests: boolean;
  private nextStep = 0;

  constructor(options: ScriptedModelOptions) {
    this.label = `scripted:${options.name}`;
    this.model = options.name;
    this.contextWindow = options.contextWindow ?? 128_000;
    this.steps = options.steps;
    this.recordRequests = options.recordRequests ?? true;
    this.summarize = options.summarize ?? ((request) => ({ content: scriptedSummaryAnswer(request) }));
  }

  /** How many calls have been made; every call takes the next step, even one that is aborted. */
  get stepsTaken(): number {
    return this.nextStep;
  }

  async complete(request: ModelRequest, onEvent?: (event: ModelStreamEvent) => void): Promise<ModelResponse> {
    if (isSummaryRequest(request)) {
      const index = this.summaryRequests.length;
      if (this.recordRequests) this.summaryRequests.push(copyRequest(request));
      if (request.signal?.aborted) throw abortError(request.signal);
      return this.answer(request, this.summarize(request, index), -1 - index, onEvent);
    }
    // The step index is taken synchronously, so concurrent calls get steps in call order.
    const stepIndex = this.nextStep++;
    if (this.recordRequests) this.requests.push(copyRequest(request));
    if (request.signal?.aborted) throw abortError(request.signal);
    return this.answer(request, this.stepFor(request, stepIndex), stepIndex, onEvent);
  }

  private async answer(
    request: ModelRequest,
    step: ScriptStep,
    stepIndex: number,
    onEvent: ((event: ModelStreamEvent) => void) | undefined,
  ): Promise<ModelResponse> {
    if (step.delayMs) await delay(step.delayMs, request.signal);

    const content = step.content ?? null;
    const toolCalls = (step.toolCalls ?? []).map((call, index) => toToolCall(call, stepIndex, index));
    if (content) await streamText(content, step.streamMs, request.signal, onEvent);
    for (const [index, call] of toolCalls.entries()) onEvent?.({ type: "tool_call", index, call });
    return {
      content,
      toolCalls,
      usage: withOverrides(estimateUsage(request.messages, content), step.usage),
      finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
      model: this.label,
    };
  }

  private stepFor(request: ModelRequest, stepIndex: number): ScriptStep {
    if (typeof this.steps === "function") return this.steps(request, stepIndex);
    return this.steps[stepIndex] ?? { content: NO_MORE_STEPS_REPLY };
  }
}

function copyRequest(request: ModelRequest): ModelRequest {
  // The signal is left out: it is not data, and structuredClone cannot copy it.
  return {
    messages: structuredClone(request.messages),
    tools: structuredClone(request.tools),
    ...(request.maxOutputTokens !== undefined && { maxOutputTokens: request.maxOutputTokens }),
  };
}

function toToolCall(call: { name: string; arguments: unknown; id?: string }, stepIndex: number, index: number): ToolCall {
  const text = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {});
  return { id: call.id ?? `call_${stepIndex}_${index}`, name: call.name, arguments: text };
}

async function streamText(
  content: string,
  streamMs: number | undefined,
  signal: AbortSignal | undefined,
  onEvent: ((event: ModelStreamEvent) => void) | undefined,
): Promise<void> {
  // Split after whitespace, so no piece holds half a surrogate pair either.
  const pieces = streamMs ? content.split(/(?<=\s)/) : splitIntoDeltas(content);
  for (const [index, piece] of pieces.entries()) {
    if (streamMs && index > 0) await delay(streamMs / pieces.length, signal);
    onEvent?.({ type: "text", delta: piece });
  }
}

/** Up to three pieces, split by code point so no piece holds half a surrogate pair. */
function splitIntoDeltas(content: string): string[] {
  const chars = Array.from(content);
  const size = Math.max(1, Math.ceil(chars.length / 3));
  const pieces: string[] = [];
  for (let start = 0; start < chars.length; start += size) pieces.push(chars.slice(start, start + size).join(""));
  return pieces;
}

/** A rough four-characters-per-token estimate, so budgets and usage totals move in tests. */
function estimateUsage(messages: ChatMessage[], content: string | null): TokenUsage {
  const inputChars = messages.reduce((sum, message) => sum + (message.content?.length ?? 0), 0);
  return { input: Math.ceil(inputChars / 4), output: Math.ceil((content?.length ?? 0) / 4), cached: 0, reasoning: 0 };
}

function withOverrides(estimate: TokenUsage, overrides: Partial<TokenUsage> | undefined): TokenUsage {
  const given = Object.entries(overrides ?? {}).filter(([, value]) => value !== undefined);
  return { ...estimate, ...Object.fromEntries(given) };
}

function abortError(signal: AbortSignal): Error {
  const error = new Error("The model request was aborted", { cause: signal.reason });
  error.name = "AbortError";
  return error;
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
