// The tokenizer port (R9): how many tokens a text costs in a model's vocabulary. The context
// budget counts through it. By default nothing is plugged in and the budget uses the local
// estimator (memory/token-estimator.ts), which needs no vocabulary; a real BPE tokenizer
// (adapters/tiktoken-tokenizer.ts, TOKENIZER=o200k_base|cl100k_base) counts exactly instead.

/** The tokenizers a server can be configured with; `estimate` is the local estimator. */
export const TOKENIZER_NAMES = ["estimate", "o200k_base", "cl100k_base"] as const;
export type TokenizerName = (typeof TOKENIZER_NAMES)[number];

export interface Tokenizer {
  readonly name: TokenizerName | string;
  /** Tokens of the text, special-token look-alikes counted as ordinary text. */
  count(text: string): number;
}
