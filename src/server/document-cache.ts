// Parsed documents kept by their text, so that a document sent again is neither parsed nor
// validated again: the same text finds the same document object, and Yoga's validation cache
// the validation result, each document's page-size arguments (server/hardening.ts) and its compiled
// plan (server/compiled-execution.ts) are found by that object and live only as long as it does.
//
// Only what the server runs is kept: a document that fails validation or a query limit is dropped
// again as soon as it is known to fail, and a text that does not parse (a syntax error, too many
// tokens) is never kept. What is kept is bounded by count and by an estimate of the memory it
// takes, not by its text alone: a parsed document costs far more than its text (up to about 490
// bytes a token, for a selection of bare names, against two bytes a character of text), and its
// compiled plan, which lives as long as it does, is charged to it as well.
//
// Each principal holds at most a quarter of the cache, by count and by bytes, as automatic
// persisted queries do (server/automatic-persisted-queries.ts): a document is charged, whole, to
// every principal that uses it (the SDK's texts, the same for everyone, are one document each), and
// a principal at its share makes room with its own least recently used documents, never another's:
// a document another principal still uses stays for it. However many distinct texts one principal
// sends, even after sending everyone's texts too, the others' documents stay until the whole cache
// is full of documents used more recently. An operation over a socket has no request to name its
// principal by: all of them share one share.
import { type DocumentNode, type Token, TokenKind } from "graphql";
import type { Plugin, YogaServerOptions } from "graphql-yoga";
import { LRUCache } from "lru-cache";
import { PrincipalShares } from "./principal-shares.js";

/** How many documents are kept at most, least recently used first out. */
export const DOCUMENT_CACHE_MAX = 1_000;
/** How many bytes the kept documents may take, all together, by documentBytes' estimate. */
export const DOCUMENT_CACHE_MAX_BYTES = 32 * 1024 * 1024;
/** How many documents one principal holds at most: a quarter of DOCUMENT_CACHE_MAX (every SDK operation fits). */
export const DOCUMENT_CACHE_MAX_PER_PRINCIPAL = 250;
/** How many bytes one principal's documents may take at most: a quarter of DOCUMENT_CACHE_MAX_BYTES. */
export const DOCUMENT_CACHE_MAX_BYTES_PER_PRINCIPAL = 8 * 1024 * 1024;
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
  /** How many documents one principal holds; at it, the principal's own least recently used go. */
  maxPerPrincipal?: number;
  /** How many bytes one principal's documents take; past it, the principal's own least recently used go. */
  maxBytesPerPrincipal?: number;
  /** The principal a request acts as (authentication has admitted it when this is asked); none: one share for all. */
  principalOf?(request: Request): Promise<string>;
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

/** The principal of an operation that came without a request (over a socket). */
const NO_REQUEST = "";

/**
 * Yoga's `parserAndValidationCache` setting (it keeps the validation results; the documents are
 * the plugin's), the plugin that finds and keeps documents and drops a document once it fails
 * validation (it must be in Yoga's plugins, wherever: it acts on parsing's and validation's
 * results), and `charge`, which weighs in what else a document keeps alive (compiled plans).
 */
export function documentCache(options: DocumentCacheOptions = {}) {
  const { max = DOCUMENT_CACHE_MAX, maxBytes = DOCUMENT_CACHE_MAX_BYTES, principalOf } = options;
  const { maxPerPrincipal = DOCUMENT_CACHE_MAX_PER_PRINCIPAL, maxBytesPerPrincipal = DOCUMENT_CACHE_MAX_BYTES_PER_PRINCIPAL } = options;
  /** The bytes charged to each document besides its own (its compiled plans). */
  const charged = new WeakMap<DocumentNode, number>();
  const weigh = (document: DocumentNode, text: string) => documentBytes(text, document) + (charged.get(document) ?? 0);
  const documents: LRUCache<string, DocumentNode> = new LRUCache<string, DocumentNode>({
    max,
    maxSize: maxBytes,
    sizeCalculation: (document, text) => weigh(document, text),
    // A document out of the cache, by the cache's bounds, its principals' or a failed validation, is out of their shares.
    // One kept again in its place (the same text parsed twice at once, or weighed again) stays in them.
    dispose: (_document, text, reason) => void (reason === "set" || shares.release(text)),
  });
  /** The principals each kept text is charged to, and each principal's share. */
  const shares = new PrincipalShares({ max: maxPerPrincipal, maxBytes: maxBytesPerPrincipal }, (text) => documents.delete(text));
  /** Keeps a document by its text, charged to the principal (too). */
  const keep = (principal: string, text: string, document: DocumentNode) => {
    const size = weigh(document, text);
    // A document heavier than the cache, or than a principal's share, is not kept.
    if (size > Math.min(maxBytes, maxBytesPerPrincipal)) return void documents.delete(text);
    shares.hold(principal, text, size);
    documents.set(text, document);
    texts.set(document, text);
    // Past the whole cache's bounds its least recently used went, whoever's it was (this one too, if it did not fit).
    if (documents.peek(text) !== document) shares.release(text);
  };
  /** The text each kept document was kept by. */
  const texts = new WeakMap<DocumentNode, string>();
  const kept = (document: DocumentNode) => {
    const text = texts.get(document);
    return text !== undefined && documents.peek(text) === document ? text : undefined;
  };
  /** Each request's principal, once authentication has told it. */
  const principals = new WeakMap<Request, string>();
  const principalOfContext = (context: unknown) => {
    const request = (context as { request?: Request } | undefined)?.request;
    return (request && principals.get(request)) ?? NO_REQUEST;
  };
  const settings: ParserAndValidationCache = { documentCache: KEEPS_NOTHING, errorCache: KEEPS_NOTHING, validationCache: true };
  const plugin: Plugin = {
    onParams({ request }) {
      if (!principalOf) return;
      // A refused request never gets here (server/refused-requests.ts); should its principal be unknown, it shares the socket's share.
      return principalOf(request).then(
        (principal) => void principals.set(request, principal),
        () => undefined,
      );
    },
    onParse({ context, params, setParsedDocument }) {
      const text = params.source.toString();
      const principal = principalOfContext(context);
      const document = documents.get(text);
      if (document) {
        shares.used(principal, text);
        setParsedDocument(document);
        return;
      }
      return ({ result }) => {
        // A text that does not parse (an error) is never kept.
        if (result && !(result instanceof Error) && "kind" in result) keep(principal, text, result as DocumentNode);
      };
    },
    onValidate({ params }) {
      return ({ valid }) => {
        const text = valid ? undefined : kept(params.documentAST);
        if (text !== undefined) documents.delete(text);
      };
    },
  };
  /**
   * Adds to a document's weight what lives as long as it does (its compiled plan): a kept document
   * is weighed again, and the least recently used leave if it no longer fits.
   */
  function charge(document: DocumentNode, bytes: number): void {
    charged.set(document, (charged.get(document) ?? 0) + bytes);
    const text = kept(document);
    if (text === undefined) return;
    const size = weigh(document, text);
    if (size > Math.min(maxBytes, maxBytesPerPrincipal)) return void documents.delete(text);
    // In every share that holds it, then in the whole cache (which weighs it again on `set`; it fits).
    shares.resize(text, size);
    documents.set(text, document);
  }
  return { settings, plugin, charge, documents };
}
