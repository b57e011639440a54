// A real BPE tokenizer behind the tokenizer port: the vocabularies js-tiktoken ships (no network),
// counted in n log n time for a text of n characters, not n². A vocabulary is 1–2 MB of JavaScript, so it is read only
// when a server is configured with it, on its first count.
//
// js-tiktoken's own encoder merges a piece (a run of letters, of punctuation, of spaces) by
// rescanning all of it after every merge: quadratic in the piece, so 4,000 Han characters without
// punctuation or 8,000 "a" took seconds to minutes, during which the worker did nothing else. The
// same merges are made here in the same order — the adjacent pair of lowest rank, the leftmost on
// a tie — from a queue of candidate pairs: each merge costs a logarithm of the length of
// the piece. The counts are js-tiktoken's, exactly (test/runtime/tokenizer-long-runs.test.ts).
import { createRequire } from "node:module";
import type { TiktokenBPE } from "js-tiktoken/lite";
import type { Tokenizer } from "../ports/tokenizer.js";

export type BpeEncoding = "o200k_base" | "cl100k_base";

const require = createRequire(import.meta.url);

/** A vocabulary: its pre-tokenizing pattern, and each token's rank by its bytes (one char per byte). */
type Vocabulary = { pattern: RegExp; ranks: Map<string, number> };

function readVocabulary(encoding: BpeEncoding): Vocabulary {
  const file = require(`js-tiktoken/ranks/${encoding}`) as TiktokenBPE;
  const ranks = new Map<string, number>();
  // Each line: a placeholder, the rank of its first token, then base64 tokens of consecutive ranks.
  for (const line of file.bpe_ranks.split("\n")) {
    if (!line) continue;
    const [, offset, ...tokens] = line.split(" ");
    const first = Number.parseInt(offset!, 10);
    for (const [index, token] of tokens.entries()) ranks.set(Buffer.from(token, "base64").toString("latin1"), first + index);
  }
  return { pattern: new RegExp(file.pat_str, "gu"), ranks };
}

export function tiktokenTokenizer(encoding: BpeEncoding): Tokenizer {
  let vocabulary: Vocabulary | undefined;
  return {
    name: encoding,
    // No special tokens: text that looks like `<|endoftext|>` is counted as the text it is.
    count: (text) => countTokens(text, (vocabulary ??= readVocabulary(encoding))),
  };
}

/** Tokens of a text: the pattern splits it into pieces, and each piece is merged on its own. */
function countTokens(text: string, { pattern, ranks }: Vocabulary): number {
  let tokens = 0;
  for (const match of text.matchAll(pattern)) {
    const bytes = Buffer.from(match[0], "utf8").toString("latin1");
    tokens += ranks.has(bytes) ? 1 : mergedParts(bytes, ranks);
  }
  return tokens;
}

/**
 * How many tokens byte-pair merging leaves of a piece (its bytes, one char per byte): starting from
 * single bytes, the adjacent pair whose concatenation has the lowest rank is merged, the leftmost
 * on a tie, until no pair is a token. Every single byte is a token of both vocabularies.
 */
function mergedParts(bytes: string, ranks: Map<string, number>): number {
  const length = bytes.length;
  // The parts as a linked list over their first byte: the part at `start` ends where the next begins.
  const end = new Int32Array(length);
  const previous = new Int32Array(length);
  const absorbed = new Uint8Array(length);
  for (let start = 0; start < length; start += 1) {
    end[start] = start + 1;
    previous[start] = start - 1;
  }
  const queue = new PairQueue();
  const offer = (left: number) => {
    if (left < 0 || end[left]! >= length) return;
    const pairEnd = end[end[left]!]!;
    const rank = ranks.get(bytes.slice(left, pairEnd));
    if (rank !== undefined) queue.push(rank, left, pairEnd);
  };
  for (let start = 0; start + 1 < length; start += 1) offer(start);
  let parts = length;
  while (queue.size > 0) {
    const [left, pairEnd] = queue.pop();
    // Parts only grow, so the pair is still there if its left part is and the part after it ends where the pair did.
    if (absorbed[left] || end[left]! >= length || end[end[left]!] !== pairEnd) continue;
    absorbed[end[left]!] = 1;
    end[left] = pairEnd;
    if (pairEnd < length) previous[pairEnd] = left;
    parts -= 1;
    offer(previous[left]!);
    offer(left);
  }
  return parts;
}

/** A binary min-heap of pairs by rank, then by the position of the left part: the order in which they merge. */
class PairQueue {
  /** rank × 2³² + the left part's position: ranks are below 2¹⁸, so the key is an exact double. */
  private readonly keys: number[] = [];
  private readonly ends: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  push(rank: number, left: number, pairEnd: number): void {
    const { keys, ends } = this;
    const key = rank * 2 ** 32 + left;
    let at = keys.length;
    for (; at > 0 && keys[(at - 1) >> 1]! > key; at = (at - 1) >> 1) {
      keys[at] = keys[(at - 1) >> 1]!;
      ends[at] = ends[(at - 1) >> 1]!;
    }
    keys[at] = key;
    ends[at] = pairEnd;
  }

  /** The first pair as [position of its left part, its end]; the queue must not be empty. */
  pop(): [number, number] {
    const { keys, ends } = this;
    const top: [number, number] = [keys[0]! % 2 ** 32, ends[0]!];
    const [key, pairEnd] = [keys.pop()!, ends.pop()!];
    const size = keys.length;
    if (size === 0) return top;
    let at = 0;
    for (let child = 1; child < size; at = child, child = 2 * at + 1) {
      if (child + 1 < size && keys[child + 1]! < keys[child]!) child += 1;
      if (keys[child]! >= key) break;
      keys[at] = keys[child]!;
      ends[at] = ends[child]!;
    }
    keys[at] = key;
    ends[at] = pairEnd;
    return top;
  }
}
