// Parsed documents kept by their text, so that a document sent again is neither parsed nor
// validated again: Yoga's parse cache hands back the same document object for the same text, and
// the validation result, each document's page-size arguments (server/hardening.ts) and its compiled
// plan (server/compiled-execution.ts) are found by that object and live only as long as it does.
//
// Only what the server runs is kept: a document that fails validation or a query limit is dropped
// again as soon as it is known to fail, and a text that does not parse (a syntax error, too many
// tokens) is never kept. What is kept is bounded by count and by an estimate of the memory it
// takes, not by its text alone: a parsed document costs far more than its text (up to about 490
// bytes a token, for a selection of bare names, against two bytes a character of text), and its
// compiled plan, which lives as long as it does, is charged to it as well.
import { type DocumentNode, type Token, TokenKind } from "graphql";
import type { Plugin, YogaServerOptions } from "graphql-yoga";
import { LRUCache } from "lru-cache";

/** How many documents are kept at most, least recently used first out. */
export const DOCUMENT_CACHE_MAX = 1_000;
/** How many bytes the kept documents may take, all together, by documentBytes' estimate. */
export const DOCUMENT_CACHE_MAX_BYTES = 32 * 1024 * 1024;
/**
 * The memory of one token of a parsed document: its token object, its node, its name and their
 * locations. Measured with graphql 16: about 490 bytes for a bare field name, less for everything
 * else (an argument about 250, a variable definition about 300).
 */
export const BYTES_PER_TOKEN = 512;
/**
 * The memory of one comment: its token object, kept in the document's chain of tokens (measured:
 * about 90 bytes). Comments do not count towards the token limit: a document within the body
 * limit may hold hundreds of thousands of them.
 */
export const BYTES_PER_COMMENT = 128;

export type DocumentCacheOptions = {
  /** How many documents are kept, least recently used first out. */
  max?: number;
  /** How many bytes (documentBytes) are kept, all documents together, least recently used first out. */
  maxBytes?: number;
};

/**
 * An estimate, never below the truth, of the memory a parsed document and its text take: the text
 * counted twice at two bytes a character (the text itself, and the values its tokens copy from
 * it), BYTES_PER_TOKEN for each token and BYTES_PER_COMMENT for each comment.
 */
export function documentBytes(text: string, document: DocumentNode): number {
  // A document parsed without locations has no tokens to count: each character may be one.
  if (!document.loc) return 4 * text.length + BYTES_PER_TOKEN * Math.max(1, text.length);
  let bytes = 4 * text.length;
  for (let token: Token | null = document.loc.startToken; token; token = token.next) {
    bytes += token.kind === TokenKind.COMMENT ? BYTES_PER_COMMENT : BYTES_PER_TOKEN;
  }
  return bytes;
}

type ParserAndValidationCache = Exclude<YogaServerOptions<object, object>["parserAndValidationCache"], boolean | undefined>;

/** A cache that keeps nothing: a text that failed to parse is parsed again, and fails again. */
const KEEPS_NOTHING = { get: () => undefined, set: () => undefined };

/**
 * Yoga's `parserAndValidationCache` setting, the plugin that drops a document once it fails
 * validation (the plugin must be in Yoga's plugins, wherever: it acts on validation's result), and
 * `charge`, which weighs in what else a document keeps alive (compiled plans).
 */
export function documentCache({ max = DOCUMENT_CACHE_MAX, maxBytes = DOCUMENT_CACHE_MAX_BYTES }: DocumentCacheOptions = {}) {
  /** The bytes charged to each document besides its own (its compiled plans). */
  const charged = new WeakMap<DocumentNode, number>();
  const documents = new LRUCache<string, DocumentNode>({
    max,
    maxSize: maxBytes,
    sizeCalculation: (document, text) => documentBytes(text, document) + (charged.get(document) ?? 0),
  });
  /** The text each kept document was kept by. */
  const texts = new WeakMap<DocumentNode, string>();
  const kept = (document: DocumentNode) => {
    const text = texts.get(document);
    return text !== undefined && documents.peek(text) === document ? text : undefined;
  };
  const settings: ParserAndValidationCache = {
    documentCache: {
      get: (text) => documents.get(text),
      set(text, document) {
        texts.set(document, text);
        // A document larger than the whole budget is not kept (lru-cache declines it).
        documents.set(text, document);
      },
    },
    errorCache: KEEPS_NOTHING,
    validationCache: true,
  };
  const plugin: Plugin = {
    onValidate({ params }) {
      return ({ valid }) => {
        const text = valid ? undefined : kept(params.documentAST);
        if (text !== undefined) documents.delete(text);
      };
    },
  };
  /**
   * Adds to a document's weight what lives as long as it does (its compiled plan): kept documents
   * are weighed again, and the least recently used leave if they no longer fit.
   */
  function charge(document: DocumentNode, bytes: number): void {
    charged.set(document, (charged.get(document) ?? 0) + bytes);
    const text = kept(document);
    if (text === undefined) return;
    // Put back to be weighed again (setting the same document again keeps its old weight); one
    // heavier than the whole budget is not put back.
    documents.delete(text);
    documents.set(text, document);
  }
  return { settings, plugin, charge, documents };
}
