// R9: a local token estimator. Budget decisions (R8) are made on every model request, so they must
// not depend on a remote tokenizer; the estimate only has to be close enough for the 10% trigger
// margin to absorb its error. A real tokenizer can be plugged in through the tokenizer port
// (estimatorFor), and `npm run bench:tokens` measures the estimate against one.
import type { ChatMessage, ToolSchema } from "../ports/model.js";
import type { Tokenizer } from "../ports/tokenizer.js";
import { jsonText } from "../../domain/json-text.js";

/** Latin-script text and code average about 4 characters per token. */
const LATIN_CHARS_PER_TOKEN = 4;
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
/**
 * The generic combining marks (Combining Diacritical Marks and their Extended and Supplement blocks,
 * those for symbols, half marks): BPE vocabularies rarely merge them, so a run of them costs about a
 * token or two each. A script's own vowel signs (Devanagari, Thai) are counted as its letters.
 */
const MARK = /[\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF\u20D0-\u20FF\uFE20-\uFE2F]/u;
/** Letters, their signs and digits of any script (outside CJK): they merge into words like Latin letters do. */
const WORDLIKE = /[\p{L}\p{M}\p{N}]/u;
/** Punctuation and spaces outside ASCII (dashes, quotes, ellipses): about a token each at most. */
const PUNCTUATION = /[\p{P}\p{Z}]/u;

/** Below this code point nothing matches CJK. */
const FIRST_CJK = 0x1100;

// What a code point costs, in quarter tokens. A tool or a model can return any text, and an
// estimate far below a real tokenizer's count would send a request past the model's window instead
// of compacting: text of rarely merged code points is counted at what BPE vocabularies spend on it
// (a vocabulary without merges for them spends a token per UTF-8 byte: emoji about 3 tokens each,
// other symbols 2, combining marks 2, control characters 1).
const QUARTERS = { latin: 1, control: 4, cjk: 2, letter: 2, mark: 8, punctuation: 4, symbol: 8, supplementary: 12 } as const;

/** Supplementary planes 2 and 3 hold CJK ideographs only. */
const isSupplementaryHan = (point: number) => point >= 0x20000 && point < 0x40000;

/** The cost of each BMP code point, worked out on its first sight (0: not yet): one pattern test per code point, not per character of a text. */
const bmpQuarters = new Uint8Array(0x10000);

/** The cost of one code point that is not plain ASCII, in quarter tokens. */
function quartersOf(point: number): number {
  if (point > 0xffff) return isSupplementaryHan(point) ? QUARTERS.cjk : QUARTERS.supplementary;
  return (bmpQuarters[point] ||= classify(point));
}

function classify(point: number): number {
  // ASCII control characters, and lone surrogates (sent as an escape or a replacement character).
  if (point < 0x80 || (point >= 0xd800 && point <= 0xdfff)) return QUARTERS.control;
  const character = String.fromCodePoint(point);
  if (point >= FIRST_CJK && CJK.test(character)) return QUARTERS.cjk;
  if (MARK.test(character)) return QUARTERS.mark;
  // Letters of two-byte scripts (Latin with accents, Greek, Cyrillic, Arabic, Hebrew) merge about as
  // Latin does; letters of the scripts above (Thai, Devanagari, …) split finer.
  if (WORDLIKE.test(character)) return point < 0x800 ? QUARTERS.latin : QUARTERS.letter;
  if (PUNCTUATION.test(character)) return point < 0x800 ? QUARTERS.latin : QUARTERS.punctuation;
  return QUARTERS.symbol;
}

/** Whether an ASCII code point is counted at the Latin rate: printable, tab, line feed, carriage return. */
const isPlainAscii = (code: number) => (code >= 0x20 && code < 0x7f) || code === 0x09 || code === 0x0a || code === 0x0d;

/**
 * Estimated tokens of plain text, rounded up: Latin text and other two-byte scripts at 4 characters
 * per token, CJK and the scripts above at 2, non-ASCII punctuation and control characters at 1 token
 * each, combining marks and symbols at 2, emoji and other supplementary code points at 3.
 */
export function estimateTextTokens(text: string): number {
  let quarterTokens = 0;
  // Code points, so an emoji or other surrogate pair counts as one character. Printable ASCII is
  // counted without a pattern, which a request's JSON (tool schemas, arguments) is almost entirely made of.
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (isPlainAscii(code)) {
      quarterTokens += QUARTERS.latin;
      continue;
    }
    const point = text.codePointAt(index)!;
    if (point > 0xffff) index += 1;
    quarterTokens += quartersOf(point);
  }
  // Integer arithmetic (quarter tokens) keeps the rounding exact.
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
