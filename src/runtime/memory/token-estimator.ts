// R9: a local token estimator. Budget decisions (R8) are made on every model request, so they must
// not depend on a remote tokenizer; the estimate only has to be close enough for the 10% trigger
// margin to absorb its error. A real tokenizer can be plugged in through the tokenizer port
// (estimatorFor), and `npm run bench:tokens` measures the estimate against one.
import type { ChatMessage, ToolSchema } from "../ports/model.js";
import type { Tokenizer } from "../ports/tokenizer.js";
import { jsonText } from "../../domain/json-text.js";

/** Latin-script text and code average about 4 characters per token. */
const LATIN_CHARS_PER_TOKEN = 4;
/** CJK text averages about 2 characters per token (most BPE vocabularies split ideographs finely). */
const CJK_CHARS_PER_TOKEN = 2;
/** JSON spends extra tokens on quotes, braces and keys: +15% over the same characters as prose. */
const JSON_OVERHEAD_PERCENT = 115;

/**
 * Per-message framing in the chat-completions format (role marker, separators, end-of-message
 * token). OpenAI documents 3–4 tokens per message for its chat models; 4 errs on the safe side.
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;

// Code points that tokenize like CJK. `u` flag: the class matches whole code points, so supplementary
// Han ideographs (U+20000…) count once. U+3000–U+303F is CJK Symbols and Punctuation; U+FF00–U+FFEF
// is Halfwidth and Fullwidth Forms (fullwidth Latin, punctuation and halfwidth Katakana).
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303F\uFF00-\uFFEF]/u;

/** Below this code point nothing matches CJK. */
const FIRST_CJK = 0x1100;

/** Estimated tokens of plain text: CJK code points at 2 per token, all others at 4, rounded up. */
export function estimateTextTokens(text: string): number {
  let cjk = 0;
  let other = 0;
  // Code points, so an emoji or other surrogate pair counts as one character. Below U+1100 (the
  // first CJK code point, Hangul Jamo) nothing is CJK: such a character is counted without the
  // pattern, which a request's JSON (tool schemas, arguments) is almost entirely made of.
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < FIRST_CJK) {
      other += 1;
      continue;
    }
    const point = text.codePointAt(index)!;
    if (point > 0xffff) index += 1;
    if (CJK.test(String.fromCodePoint(point))) cjk += 1;
    else other += 1;
  }
  // Integer arithmetic (quarter tokens) keeps the rounding exact: cjk/2 + other/4 = (2·cjk + other)/4.
  const quarterTokens = cjk * (LATIN_CHARS_PER_TOKEN / CJK_CHARS_PER_TOKEN) + other;
  return Math.ceil(quarterTokens / LATIN_CHARS_PER_TOKEN);
}

/**
 * Estimated tokens of JSON: the text estimate × 1.15, rounded up. A string is taken to be JSON text
 * already (tool-call arguments arrive that way); any other value is serialized first. A value that
 * serializes to nothing (`undefined`, a function) costs 0.
 */
export function estimateJsonTokens(value: unknown): number {
  const json = typeof value === "string" ? value : JSON.stringify(value);
  if (json === undefined) return 0;
  // Multiply before dividing so that e.g. 20 tokens give exactly 23, not ceil(22.999…) by luck.
  return Math.ceil((estimateTextTokens(json) * JSON_OVERHEAD_PERCENT) / 100);
}

/**
 * Whether a tool's result is a JSON object or array: many tools answer in JSON, and those results
 * are dense in the tokens the +15% rule is for. The first and last characters rule out prose
 * cheaply; only a likely candidate is parsed (the parse costs less than the estimate's own pass).
 */
export function isJsonResult(content: string): boolean {
  const text = content.trim();
  const [first, last] = [text[0], text[text.length - 1]];
  if (!((first === "{" && last === "}") || (first === "[" && last === "]"))) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** How text is counted: plain text, and JSON (a tool result in JSON, tool-call arguments, schemas). */
type Counter = { text: (text: string) => number; json: (json: string) => number; jsonResults: boolean };

const localCounter: Counter = { text: estimateTextTokens, json: estimateJsonTokens, jsonResults: true };

/**
 * Tokens of one message, however text is counted: its content, the name and JSON arguments of
 * each tool call it makes (assistant messages), and MESSAGE_OVERHEAD_TOKENS of framing.
 */
function countMessage(message: ChatMessage, counter: Counter): number {
  const content = message.content ?? "";
  const json = counter.jsonResults && message.role === "tool" && isJsonResult(content);
  let tokens = MESSAGE_OVERHEAD_TOKENS + (json ? counter.json(content) : counter.text(content));
  if (message.role === "assistant" && message.toolCalls) {
    for (const call of message.toolCalls) tokens += counter.text(call.name) + counter.json(call.arguments);
  }
  return tokens;
}

/** Tokens of the tool schemas as JSON; no tools means no `tools` field in the request, hence 0 rather than the cost of `[]`. */
function countSchemas(tools: readonly ToolSchema[], counter: Counter): number {
  return tools.length === 0 ? 0 : counter.json(jsonText(tools));
}

/** The estimator over a way of counting text: the one place a request's parts are counted. */
function estimatorOf(counter: Counter): TokenEstimator {
  return {
    text: counter.text,
    messages: (list) => list.reduce((sum, message) => sum + countMessage(message, counter), 0),
    tools: (tools) => countSchemas(tools, counter),
  };
}

/**
 * Estimated tokens of one message: its content (a tool result in JSON as JSON, +15%), the name and
 * JSON arguments of each tool call it makes (assistant messages), and MESSAGE_OVERHEAD_TOKENS of
 * framing. Tool-call ids are not counted: they are short and their share is within the estimator's error.
 */
export function estimateMessageTokens(message: ChatMessage): number {
  return countMessage(message, localCounter);
}

/** Estimated tokens of a list of messages: the sum of the per-message estimates. */
export function estimateMessagesTokens(messages: readonly ChatMessage[]): number {
  let tokens = 0;
  for (const message of messages) tokens += estimateMessageTokens(message);
  return tokens;
}

/** Estimated tokens of the tool schemas offered to the model, as JSON (0 without tools). */
export function estimateToolSchemasTokens(tools: readonly ToolSchema[]): number {
  return countSchemas(tools, localCounter);
}

/** What the budget needs from a tokenizer; lets a real tokenizer be swapped in for comparison. */
export interface TokenEstimator {
  /** Tokens of plain text. */
  text(s: string): number;
  /** Tokens of chat messages, including per-message framing and tool calls. */
  messages(m: readonly ChatMessage[]): number;
  /** Tokens of the tool schemas offered with a request. */
  tools(t: readonly ToolSchema[]): number;
}

/** The default, local estimator (R9). */
export const localEstimator: TokenEstimator = estimatorOf(localCounter);

/**
 * What the budget counts with: the local estimator without a tokenizer, or the tokenizer's exact
 * counts with the same framing (MESSAGE_OVERHEAD_TOKENS per message, tool calls by name and
 * arguments, tool schemas as their JSON). A real tokenizer counts JSON as it is: no +15%.
 */
export function estimatorFor(tokenizer?: Tokenizer): TokenEstimator {
  if (!tokenizer) return localEstimator;
  const count = (text: string) => tokenizer.count(text);
  return estimatorOf({ text: count, json: count, jsonResults: false });
}
