// The model port: one chat-completions step. Adapters (src/runtime/adapters) implement it over a
// vendor SDK; the scripted model (src/runtime/adapters/scripted-model.ts) implements it deterministically.

import type { ChatToolCall, RequestMessage } from "../../domain/trace/recorded-request.js";

/** A tool call the model asked for; `arguments` is the JSON text the model produced; `id` is empty when the model gave none. */
export type ToolCall = ChatToolCall;

/**
 * The messages as the model sees them (after any read-time compaction). Defined with how the log
 * reads as a request (trace/record/recorded-request.ts), which model-call spans record.
 */
export type ChatMessage = RequestMessage;

/** A tool offered to the model; `parameters` is a JSON Schema object. */
export type ToolSchema = { name: string; description: string; parameters: Record<string, unknown> };

/** Token usage as the model server reports it; absent figures are 0, each at most MAX_TOKEN_COUNT (domain/runs/vocabulary.ts). */
export type TokenUsage = { input: number; output: number; cached: number; reasoning: number };

export type ModelRequest = {
  messages: ChatMessage[];
  tools: ToolSchema[];
  /** Upper bound on output tokens for this step. */
  maxOutputTokens?: number;
  /** Aborts the request (run cancelled, deadline reached). */
  signal?: AbortSignal;
  /**
   * How many times this request was made before and cut off mid-reply (ModelReplyInterrupted),
   * each made again as a new call: they count against the adapter's bound on retries.
   */
  retries?: number;
};

/**
 * Incremental output while the step streams: text and reasoning deltas, a tool call's argument
 * text as it streams (`index` tells the step's calls apart and orders them; `id` comes with the
 * call's deltas once the server has sent it), and each tool call whole once the step has
 * finished, with the same `index`, in the order of the response's `toolCalls`.
 */
export type ModelStreamEvent =
  | { type: "text"; delta: string }
  | { type: "reasoning"; delta: string }
  | { type: "tool_call_delta"; index: number; id?: string; delta: string }
  | { type: "tool_call"; index: number; call: ToolCall };

export type ModelResponse = {
  /** The assistant's text; null when it only asked for tools. */
  content: string | null;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** As reported: "stop", "tool_calls", "length", … */
  finishReason: string;
  /** The model that answered, as reported by the server. */
  model: string;
  /**
   * False when the server reported no usage (its `usage` is then all zeros): the run charges the
   * request its bound instead (loop/model-call.ts). Absent: reported.
   */
  usageReported?: boolean;
  /**
   * Set when the reply passed the bound on one reply's size (MODEL_MAX_REPLY_BYTES, this many
   * bytes of text, reasoning and tool calls): it was not read further, and stands as what came
   * within the bound, as a reply the model cut at its token limit does (`finishReason` "length").
   */
  cutAtBytes?: number;
  /** With `cutAtBytes`: the tool calls the bound may have cut (their arguments incomplete), left out of `toolCalls`. */
  toolCallsLeftOut?: number;
};

export interface ModelPort {
  /** What answers, for runs and traces: e.g. "openai:gpt-4o-mini" or "scripted:demo". */
  readonly label: string;
  /** The model name a request asks for (`gen_ai.request.model`): e.g. "gpt-4o-mini"; the scripted model's name. */
  readonly model: string;
  /** True for the deterministic scripted model, which must be labelled as such wherever it answers. */
  readonly scripted: boolean;
  /** The context window in tokens, used for the history budget. */
  readonly contextWindow: number;
  complete(request: ModelRequest, onEvent?: (event: ModelStreamEvent) => void): Promise<ModelResponse>;
}

/**
 * The model endpoint keeps refusing for now (rate limited, overloaded: HTTP 429 or 5xx) past the
 * adapter's bounded retries. Not a failure of the run: its attempt is handed back and the run is
 * resumed by a later attempt once `retryAfterMs` has passed.
 */
export class ModelRetryLater extends Error {
  override readonly name = "ModelRetryLater";

  constructor(
    message: string,
    /** How long the endpoint asked to wait (Retry-After), or the adapter's next backoff. */
    readonly retryAfterMs: number,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/**
 * The model's reply was cut off after some of it had streamed — the connection reset or closed,
 * the body ended without a finish, the server reported a transient error mid-stream (overloaded,
 * rate limited, a server error). Nothing of the reply stands (its tool calls are not run, its text
 * is not an answer): the caller ends the call as failed and makes the request again as a new call
 * once `retryAfterMs` has passed, with `retries` one more. Past the adapter's bound it rejects with
 * ModelRetryLater instead. `usage`: what the server reported of the cut reply, if anything.
 */
export class ModelReplyInterrupted extends Error {
  override readonly name = "ModelReplyInterrupted";
  readonly usage: TokenUsage | undefined;

  constructor(
    message: string,
    readonly retryAfterMs: number,
    options: { cause?: unknown; usage?: TokenUsage } = {},
  ) {
    super(message, { cause: options.cause });
    this.usage = options.usage;
  }
}
