// Folds the chunks of one streamed chat completion into a ModelResponse, for the openai adapter.
//
// What a model server streams is data, not input to check: a chunk that does not have the
// protocol's shape (a `choices` or `tool_calls` object in place of a list, an id or a name that is
// not text, content given as a list of parts) never fails the request, and nothing it carries is
// stored in a shape the conversation log cannot read back.
// - A tool call's id or name is taken only when it is a non-empty string: without an id the call
//   gets one of Dossier's, without a name its name is "" (the model is told there is no such tool).
// - Content given as parts keeps each text part's text; any other part stands as "[<type> part]".
// - Argument, content, refusal or finish-reason values that are neither strings nor parts are kept
//   as their JSON.
// - A chunk, choice or call fragment that is not an object is passed over; a model name that is not
//   text is not taken (the configured one stands); a token count that is not a number counts 0, one
//   past what a run's counters hold counts MAX_TOKEN_COUNT; a later report never lowers a count an
//   earlier one gave; a stream that reports no tokens (or 0 input and 0 output) says so
//   (usageReported: false), for the run to charge the request's bound instead.
// - A reply that passes its bound on size (reply-size.ts; each tool call counts for itself too, and
//   each chunk that carries nothing counted its bytes on the wire, one that does its bytes past
//   FRAME_ALLOWANCE when they are more than it carries, so an endless stream of empty calls, of
//   chunks without choices or of padded chunks passes it as text does) keeps what came within it and takes
//   nothing more (`full`: the adapter stops reading); it ends as if the model had reached its token
//   limit (finish reason "length", `cutAtBytes` saying why), without the tool calls the bound may
//   have cut: the one streaming last, and any whose arguments are not JSON.
import type { ModelResponse, ModelStreamEvent, TokenUsage, ToolCall } from "../ports/model.js";
import { isJsonObject } from "../../domain/json-object.js";
import { jsonText as toJson } from "../../domain/json-text.js";
import { MAX_TOKEN_COUNT } from "../../domain/runs/vocabulary.js";
import { CALL_BYTES, FRAME_ALLOWANCE, ReplySize } from "./reply-size.js";

type PartialToolCall = { id?: string; name?: string; arguments: string };
type Fields = Record<string, unknown>;

/** The value's fields when it is an object (not a list), else none. */
const fieldsOf = (value: unknown): Fields => (isJsonObject(value) ? (value as Fields) : {});
/** A list as given; one object alone as a list of one; anything else as no items. Items that are not objects are left out. */
const objectsOf = (value: unknown): Fields[] =>
  (Array.isArray(value) ? value : value === undefined || value === null ? [] : [value]).filter(
    (item) => typeof item === "object" && item !== null && !Array.isArray(item),
  );
/** A non-empty string, or undefined. */
const label = (value: unknown): string | undefined => (typeof value === "string" && value.length > 0 ? value : undefined);
/** Whether a token count was reported: a non-negative number. */
const counted = (value: unknown): value is number => typeof value === "number" && !Number.isNaN(value) && value >= 0;
/** A token count as reported, at most MAX_TOKEN_COUNT; anything that is not a non-negative number counts 0. */
const count = (value: unknown): number => (counted(value) ? Math.min(Math.floor(value), MAX_TOKEN_COUNT) : 0);

/** A string as is, nothing as "", any other value as its JSON (however deeply it nests). */
const jsonText = (value: unknown): string => (typeof value === "string" ? value : value === undefined || value === null ? "" : toJson(value));
/** Content as streamed: a list of content parts joined, else as jsonText. */
const textOf = (value: unknown): string => (Array.isArray(value) ? value.map(partText).join("") : jsonText(value));

/** A content part's text: a text (or refusal) part's own, any other part "[<type> part]", a value that is not a part as jsonText. */
function partText(part: unknown): string {
  if (typeof part !== "object" || part === null || Array.isArray(part)) return jsonText(part);
  const fields = part as Fields;
  if (typeof fields.text === "string") return fields.text;
  if (typeof fields.refusal === "string") return fields.refusal;
  return `[${label(fields.type) ?? "content"} part]`;
}

/** Folds the chunks of one streamed completion (choice 0) into a ModelResponse. */
export class StreamAccumulator {
  private text = "";
  private readonly calls = new Map<number, PartialToolCall>();
  private usage: TokenUsage = { input: 0, output: 0, cached: 0, reasoning: 0 };
  /** The usage the chunks reported, once they gave input and output tokens (a reply cut off mid-stream usually has none). */
  reportedUsage: TokenUsage | undefined;
  /** Whether a chunk reported the request's input or output tokens. */
  private usageReported = false;
  /** As reported; undefined until a chunk reports one (a stream ended without one was cut short). */
  finishReason: string | undefined;
  private model: string | undefined;
  /** Whether any chunk arrived: from then on a failure is not retried (its output was reported). */
  started = false;
  private readonly size: ReplySize;
  /** The call the last tool-call fragment was for: a reply cut at its bound may have cut it. */
  private lastCall: number | undefined;

  constructor(
    private readonly onEvent: ((event: ModelStreamEvent) => void) | undefined,
    /** The bound on the reply's size (MODEL_MAX_REPLY_BYTES); none by default. */
    maxReplyBytes = Number.POSITIVE_INFINITY,
  ) {
    this.size = new ReplySize(maxReplyBytes);
  }

  /** Whether the reply passed its bound: nothing more is taken, and the rest of it need not be read. */
  get full(): boolean {
    return this.size.full;
  }

  /** Ends the reply where it is, as one that passed its bound (its body sent more than the bound without a chunk). */
  cut(): void {
    this.size.full = true;
  }

  /**
   * Folds in one streamed chunk, which came in `wireBytes` bytes of the body (decoded): the chunk
   * counts against the bound what it carries, or, carrying nothing counted, those bytes.
   */
  add(chunk: unknown, wireBytes = 0): void {
    this.started = true;
    if (this.size.full) return;
    const before = this.size.used;
    this.addChunk(chunk);
    const carried = this.size.used - before;
    // A chunk that carries nothing counted spends its wire bytes. One that does spends what it
    // carries, or its wire bytes past a frame's allowance when that is more: a model's ordinary
    // chunks (≈ 250 bytes for a token's few) spend what they carry, so the bound stays one on the
    // reply, while a chunk padded (a long model name, unknown fields, more choices) spends its padding.
    const extra = carried === 0 ? wireBytes : wireBytes - FRAME_ALLOWANCE - carried;
    if (extra > 0) this.size.spend(extra);
  }

  private addChunk(chunk: unknown): void {
    const fields = fieldsOf(chunk);
    this.model = label(fields.model) ?? this.model;
    if (typeof fields.usage === "object" && fields.usage !== null) {
      // Servers that report usage more than once report it as it grows: a later report (a partial
      // one, `usage: {}`) never takes back counts an earlier one gave.
      this.usage = laterUsage(this.usage, fieldsOf(fields.usage));
      // Counts of 0 on both sides are as none. One side alone at 0 is a real report: a server
      // answering from its prompt cache (Ollama) reports no input and the reply's output.
      this.usageReported = this.usage.input > 0 || this.usage.output > 0;
      this.reportedUsage = this.usageReported ? this.usage : undefined;
    }
    const choices = objectsOf(fields.choices);
    const choice = choices.find((c) => c.index === 0) ?? choices[0];
    if (!choice) return; // the usage chunk has no choices
    const delta = fieldsOf(choice.delta);
    // A refusal is the model's reply in place of content; the runtime should see it as text.
    const text = this.size.take(textOf(delta.content) + textOf(delta.refusal));
    if (text) {
      this.text += text;
      this.onEvent?.({ type: "text", delta: text });
    }
    this.addReasoning(delta);
    for (const fragment of objectsOf(delta.tool_calls)) if (!this.size.full) this.addToolFragment(fragment);
    const finishReason = jsonText(choice.finish_reason);
    if (finishReason) this.finishReason = finishReason;
  }

  /** The response; call it only once the stream reported a finish reason. */
  finish(configuredModel: string): ModelResponse {
    const streamed = this.completeToolCalls();
    const full = this.size.full;
    const toolCalls = full ? streamed.filter(({ index, call }) => index !== this.lastCall && isJson(call.arguments)) : streamed;
    for (const { index, call } of toolCalls) this.onEvent?.({ type: "tool_call", index, call });
    return {
      content: this.text.length > 0 ? this.text : null,
      toolCalls: toolCalls.map(({ call }) => call),
      usage: this.usage,
      finishReason: full ? "length" : (this.finishReason ?? "stop"),
      model: this.model ?? configuredModel,
      ...(!this.usageReported && { usageReported: false }),
      ...(full && { cutAtBytes: this.size.maxBytes, toolCallsLeftOut: streamed.length - toolCalls.length }),
    };
  }

  private addReasoning(delta: Fields): void {
    // Servers that send both fields (some vLLM versions) send the same text twice; take one.
    const reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : delta.reasoning;
    const taken = typeof reasoning === "string" ? this.size.take(reasoning) : "";
    if (taken.length > 0) this.onEvent?.({ type: "reasoning", delta: taken });
  }

  private addToolFragment(fragment: Fields): void {
    // Some compatible servers omit `index` when they send each call whole, in one fragment.
    const index = typeof fragment.index === "number" && Number.isInteger(fragment.index) ? fragment.index : this.calls.size;
    this.lastCall = index;
    // A new call counts against the bound as it starts, even one that streams nothing else; one
    // that does not fit is not taken (the call before it ended whole, and stands).
    if (!this.calls.has(index) && !this.size.spend(CALL_BYTES)) return;
    const call = this.calls.get(index) ?? { arguments: "" };
    const fn = fieldsOf(fragment.function);
    // Id and name normally come only in the first fragment; servers that repeat them repeat
    // the whole value, so the first one wins instead of concatenating.
    call.id ??= label(this.size.take(label(fragment.id) ?? ""));
    call.name ??= label(this.size.take(label(fn.name) ?? ""));
    const delta = this.size.take(jsonText(fn.arguments));
    call.arguments += delta;
    this.calls.set(index, call);
    if (delta) this.onEvent?.({ type: "tool_call_delta", index, ...(call.id !== undefined && { id: call.id }), delta });
  }

  /** The calls in index order, each with its stream index; a call the server sent no id for has an empty one (Dossier gives it its own). */
  private completeToolCalls(): { index: number; call: ToolCall }[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        index,
        call: {
          id: call.id ?? "",
          // A call without a name is answered as a call of a tool that does not exist.
          name: call.name ?? "",
          // A call of a tool without parameters may stream no argument text at all.
          arguments: call.arguments.length > 0 ? call.arguments : "{}",
        },
      }));
  }
}

/** Whether `text` is JSON (the whole of a value, nothing cut from its end). */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The usage known after a report: each count the larger of what was known and what the report gives. */
function laterUsage(known: TokenUsage, usage: Fields): TokenUsage {
  return {
    input: Math.max(known.input, count(usage.prompt_tokens)),
    output: Math.max(known.output, count(usage.completion_tokens)),
    cached: Math.max(known.cached, count(fieldsOf(usage.prompt_tokens_details).cached_tokens)),
    reasoning: Math.max(known.reasoning, count(fieldsOf(usage.completion_tokens_details).reasoning_tokens)),
  };
}
