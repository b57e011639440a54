// ModelPort over the OpenAI chat-completions API (and compatible servers: vLLM, Ollama, OpenRouter, …).
// This is the only file that imports the `openai` package, so a vendor change stays in one place.
//
// Error contract:
// - An aborted `request.signal` rejects with an Error whose `name` is "AbortError" (the signal's
//   reason is its `cause`), never with a ModelError: callers treat cancellation as control flow,
//   the same way for every ModelPort (the scripted model rejects the same way).
// - Every other failure of the SDK (HTTP status, connection, timeout, error event or malformed
//   JSON in the stream) rejects with ModelError; the SDK's error is its `cause`.
// - Chunks that parse but do not have the protocol's shape never reject: what they carry is kept
//   as the reply (openai-stream.ts).
// - Errors thrown by `onEvent` propagate unchanged: they are the caller's, not the model's.
// - Back-pressure (model-back-pressure.ts): a request the endpoint refused with 429 or 5xx, or could
//   not reach, before anything streamed is tried again after its Retry-After (or a backoff), a
//   bounded number of times; a busy endpoint still refusing past that rejects with ModelRetryLater.
//   At most maxConcurrency requests per endpoint are in flight in this process.
// - A reply cut off once it had streamed something (the connection reset or closed mid-body, the
//   body ended without a finish reason, an `error` event mid-stream that is transient — see
//   interruption.ts) rejects with ModelReplyInterrupted: the caller makes the request again as a
//   new call, `retries` one more. The same bound holds (`request.retries` counts against it); past it
//   the request rejects with ModelRetryLater. Cut off before anything streamed, it is tried again here.
// - A reply that passes MODEL_MAX_REPLY_BYTES (its text, reasoning and tool calls, or what its body
//   sends without a complete chunk, decoded) is not read further — its connection is closed — and
//   resolves as what came within the bound, like a reply the model cut at its token limit
//   (openai-stream.ts): never a failure, never made again.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, OpenAIError } from "openai";
import {
  type ChatMessage,
  type ModelPort,
  ModelReplyInterrupted,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamEvent,
  type ToolSchema,
} from "../ports/model.js";
import { lostMidStream, transientErrorEvent } from "./interruption.js";
import { type BackPressureOptions, EndpointGate, pause, retryAfterMs, retryDelay } from "./model-back-pressure.js";
import type { BodyBound } from "./model-body.js";
import { type EndpointInit, endpointFetch } from "./model-http.js";
import { StreamAccumulator } from "./openai-stream.js";

type MessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ToolParam = OpenAI.Chat.Completions.ChatCompletionFunctionTool;

export type OpenAIModelOptions = {
  /** e.g. "http://127.0.0.1:8000/v1" for a compatible server; defaults to api.openai.com. */
  baseURL?: string;
  apiKey: string;
  model: string;
  contextWindow: number;
  /** The SDK's timeout: it bounds each attempt until response headers, not the streamed body. */
  timeoutMs?: number;
  /** Requests in flight at once to this endpoint from this process (MODEL_MAX_CONCURRENCY); default 16. */
  maxConcurrency?: number;
  /** How long a reply's body may send nothing before it counts as cut off (MODEL_IDLE_TIMEOUT_MS); default 5 minutes. */
  idleTimeoutMs?: number;
  /** The most one reply may stream, in bytes (MODEL_MAX_REPLY_BYTES); default 16 MiB. */
  maxReplyBytes?: number;
} & BackPressureOptions;

export class ModelError extends Error {
  override readonly name = "ModelError";
  /** The HTTP status, when the server answered with one. */
  readonly status: number | undefined;
  /** The API's error code (e.g. "rate_limit_exceeded"), when it sent one. */
  readonly code: string | undefined;
  /** Whether trying again later may succeed (rate limits, server errors, connection failures). */
  readonly retryable: boolean;
  /** How long the server asked to wait before trying again (Retry-After), when it said. */
  readonly retryAfterMs: number | undefined;
  /** The reply was cut off once the server had answered: transient, like a busy endpoint's refusal. */
  readonly interrupted: boolean;

  constructor(
    message: string,
    options: { status?: number; code?: string; retryable?: boolean; retryAfterMs?: number; interrupted?: boolean; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = options.status;
    this.code = options.code;
    this.interrupted = options.interrupted ?? false;
    this.retryable = (options.retryable ?? false) || this.interrupted;
    this.retryAfterMs = options.retryAfterMs;
  }
}

const DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** The stream OpenAIModel.warm's request is answered with, in process. */
const WARM_STREAM = `data: ${JSON.stringify({ id: "warm-up", object: "chat.completion.chunk", created: 0, model: "warm-up", choices: [{ index: 0, delta: { content: "" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;

/**
 * The SDK's client. Every option the SDK would otherwise read from OPENAI_* environment variables
 * is pinned here, because configuration comes only from src/config.ts.
 */
function sdkClient({ idleTimeoutMs, ...options }: { apiKey: string; baseURL: string; timeout?: number; idleTimeoutMs?: number; fetch?: typeof fetch }): OpenAI {
  return new OpenAI({
    // One kept-alive connection per endpoint, each request written at once (model-http.ts).
    fetch: endpointFetch({ idleTimeoutMs }),
    ...options,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    logLevel: "warn",
    // Retries are this adapter's own (OpenAIModel.complete): they honour Retry-After with a bound,
    // and give up on a busy endpoint by handing the attempt back rather than failing the run.
    maxRetries: 0,
  });
}

export class OpenAIModel implements ModelPort {
  readonly label: string;
  readonly scripted = false;
  readonly contextWindow: number;
  readonly model: string;
  private readonly baseURL: string;
  private readonly client: OpenAI;
  private readonly gate: EndpointGate;
  private readonly backPressure: BackPressureOptions;
  private readonly maxReplyBytes: number;

  constructor(options: OpenAIModelOptions) {
    this.model = options.model;
    this.label = `openai:${options.model}`;
    this.contextWindow = options.contextWindow;
    this.baseURL = options.baseURL ?? DEFAULT_BASE_URL;
    this.client = sdkClient({
      apiKey: options.apiKey,
      baseURL: this.baseURL,
      idleTimeoutMs: options.idleTimeoutMs ?? 300_000,
      ...(options.timeoutMs !== undefined && { timeout: options.timeoutMs }),
    });
    this.gate = EndpointGate.of(this.baseURL, options.maxConcurrency ?? 16);
    this.maxReplyBytes = options.maxReplyBytes ?? 16 * 1024 * 1024;
    this.backPressure = { maxRetries: options.maxRetries, maxDelayMs: options.maxDelayMs, baseDelayMs: options.baseDelayMs };
  }

  /**
   * Makes one streamed request answered in this process (nothing is sent): the parts of the SDK
   * and of fetch that load on a process's first request load now, when the worker starts, instead
   * of holding up its first run's first model request.
   */
  async warm(): Promise<void> {
    const answer = () => new Response(WARM_STREAM, { headers: { "content-type": "text/event-stream" } });
    const local = sdkClient({ apiKey: "warm-up", baseURL: this.baseURL, fetch: async () => answer() });
    const stream = await local.chat.completions.create({ model: this.model, messages: [{ role: "user", content: "" }], stream: true });
    for await (const _ of stream);
  }

  async complete(request: ModelRequest, onEvent?: (event: ModelStreamEvent) => void): Promise<ModelResponse> {
    const { signal } = request;
    const aborted = () => abortError(signal!);
    for (let retry = request.retries ?? 0; ; retry += 1) {
      const accumulator = new StreamAccumulator(onEvent, this.maxReplyBytes);
      const release = await this.gate.acquire(signal, aborted);
      let failure: unknown;
      try {
        return await this.once(request, accumulator);
      } catch (error) {
        failure = error;
      } finally {
        release();
      }
      if (!(failure instanceof ModelError)) throw failure;
      const busy = failure.status === 429 || (failure.status ?? 0) >= 500 || failure.interrupted;
      // Only a request refused (or cut off) before anything streamed is tried again here: nothing was reported yet.
      if (accumulator.started && !failure.interrupted) throw failure;
      const delay = retryDelay(failure, { busy, retryable: failure.retryable, retryAfterMs: failure.retryAfterMs }, retry, this.backPressure);
      if (delay === undefined) throw failure;
      // What streamed of a reply cut off does not stand: the caller makes the request again, as a new call.
      if (accumulator.started) throw new ModelReplyInterrupted(failure.message, delay, { cause: failure, usage: accumulator.reportedUsage });
      await pause(delay, signal, aborted);
    }
  }

  private async once(request: ModelRequest, accumulator: StreamAccumulator): Promise<ModelResponse> {
    const { signal } = request;
    if (signal?.aborted) throw abortError(signal);
    // Whether the reply's body is being read (a failure then is the connection lost mid-stream), and
    // whether `onEvent` is running (what it throws is the caller's, passed on unchanged).
    const reading = { body: false, caller: false };
    const bound: BodyBound = { maxBytes: this.maxReplyBytes, unread: 0, delivered: 0, passed: false };
    let counted = 0;
    try {
      const stream = await this.client.chat.completions.create(
        {
          model: this.model,
          messages: request.messages.map(toMessageParam),
          // The API rejects an empty `tools` array, so a step without tools omits the field.
          ...(request.tools.length > 0 && { tools: request.tools.map(toToolParam) }),
          stream: true,
          stream_options: { include_usage: true },
          ...(request.maxOutputTokens !== undefined && { max_completion_tokens: request.maxOutputTokens }),
        },
        // The SDK hands its fetch (model-http.ts) the init's fields as given.
        { signal, fetchOptions: { replyBound: bound } satisfies Pick<EndpointInit, "replyBound"> as object },
      );
      reading.body = true;
      for await (const chunk of stream) {
        bound.unread = 0;
        // The bytes handed to the SDK since the chunk before: this chunk's event, and any it passed over (comments, [DONE]).
        const wireBytes = bound.delivered - counted;
        counted = bound.delivered;
        reading.caller = true;
        accumulator.add(chunk, wireBytes);
        reading.caller = false;
        // Past its bound the reply is read no further: leaving the loop aborts the request, closing its connection.
        if (accumulator.full) break;
      }
    } catch (error) {
      if (reading.caller) throw error;
      // The body sent more than the bound without a complete chunk: what was read of it stands. An
      // error answer (4xx, 5xx) whose body passed it stays the error it is.
      if (!bound.passed || !reading.body || signal?.aborted) throw this.translateError(error, signal, reading.body);
      accumulator.cut();
    }
    // The SDK ends the iteration quietly when the request is aborted mid-stream, so a
    // normal-looking end may be a cut-off response.
    if (signal?.aborted) throw abortError(signal);
    if (accumulator.finishReason === undefined && !accumulator.full) {
      // Without a finish reason the stream was cut short, and tool arguments may be truncated JSON.
      throw new ModelError(`${this.label}: the reply was cut off: the stream ended before the model reported a finish reason`, { interrupted: true });
    }
    return accumulator.finish(this.model);
  }

  private translateError(error: unknown, signal: AbortSignal | undefined, midStream: boolean): unknown {
    if (signal?.aborted) return abortError(signal);
    if (error instanceof ModelError) return error;
    const lost = midStream ? lostMidStream(error) : undefined;
    if (lost) return new ModelError(`${this.label}: the reply was cut off: the connection was lost mid-stream (${lost})`, { interrupted: true, cause: error });
    if (error instanceof APIConnectionTimeoutError) {
      return new ModelError(`${this.label}: the request timed out before the server answered`, {
        retryable: true,
        cause: error,
      });
    }
    if (error instanceof APIError) return this.fromAPIError(error);
    // The SDK rethrows JSON.parse's SyntaxError for a malformed stream chunk.
    if (error instanceof OpenAIError || error instanceof SyntaxError) {
      return new ModelError(`${this.label}: ${error.message}`, { cause: error });
    }
    return error;
  }

  private fromAPIError(error: APIError): ModelError {
    const code = typeof error.code === "string" ? error.code : undefined;
    if (error.status === undefined) {
      // No status: a connection failure, or an error event sent inside a 200 stream.
      // The SDK says only "Connection error."; where it tried and why (ECONNREFUSED, ENOTFOUND, …)
      // is what tells a wrong OPENAI_BASE_URL apart from a server that is down.
      const connection = error instanceof APIConnectionError;
      // An error event mid-stream is transient when it says the server is busy or failed (interruption.ts).
      const interrupted = !connection && transientErrorEvent(error.type, (error as { code?: unknown }).code);
      const where = connection
        ? `could not reach the model server at ${this.baseURL}`
        : `${interrupted ? "the reply was cut off: " : ""}the server reported an error mid-stream`;
      const why = connection ? rootCause(error) : undefined;
      return new ModelError(`${this.label}: ${where}: ${error.message}${why ? ` (${why})` : ""}`, { code, retryable: connection, interrupted, cause: error });
    }
    const retryable = error.status === 408 || error.status === 409 || error.status === 429 || error.status >= 500;
    const detail = error.message.replace(/^\d{3} /, "");
    return new ModelError(`${this.label}: HTTP ${error.status} from the model server: ${detail}`, {
      status: error.status,
      code,
      retryable,
      retryAfterMs: retryAfterMs(error.headers),
      cause: error,
    });
  }
}

/** The innermost cause's message (fetch wraps the system error: "connect ECONNREFUSED 127.0.0.1:9"). */
function rootCause(error: Error): string | undefined {
  let cause: unknown = error.cause;
  let message: string | undefined;
  for (let depth = 0; cause instanceof Error && depth < 5; depth += 1, cause = cause.cause) message = cause.message;
  return message;
}

/** An Error named "AbortError" carrying the signal's reason, whatever that reason is. */
function abortError(signal: AbortSignal): Error {
  const error = new Error("The model request was aborted", { cause: signal.reason });
  error.name = "AbortError";
  return error;
}

function toMessageParam(message: ChatMessage): MessageParam {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant":
      return {
        role: "assistant",
        content: message.content,
        // The API rejects an empty `tool_calls` array on an assistant message.
        ...(message.toolCalls?.length && {
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: { name: call.name, arguments: call.arguments },
          })),
        }),
      };
  }
}

function toToolParam(tool: ToolSchema): ToolParam {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
