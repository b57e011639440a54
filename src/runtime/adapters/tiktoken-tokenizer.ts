// A real BPE tokenizer behind the tokenizer port: js-tiktoken, pure JavaScript, with the
// vocabularies it ships (no network). A vocabulary is 1–2 MB of JavaScript, so it is read only
// when a server is configured with it, on its first count.
import { createRequire } from "node:module";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import type { Tokenizer } from "../ports/tokenizer.js";

export type BpeEncoding = "o200k_base" | "cl100k_base";

const require = createRequire(import.meta.url);

export function tiktokenTokenizer(encoding: BpeEncoding): Tokenizer {
  let encoder: Tiktoken | undefined;
  const load = () => (encoder ??= new Tiktoken(require(`js-tiktoken/ranks/${encoding}`) as TiktokenBPE));
  return {
    name: encoding,
    // No special tokens: text that looks like `<|endoftext|>` is counted as the text it is.
    count: (text) => load().encode(text, [], []).length,
  };
}
