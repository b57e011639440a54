// Automatic persisted queries, as Apollo Client's PersistedQueryLink speaks them: a request names
// its document by `extensions.persistedQuery.sha256Hash` alone; a server that does not know the
// hash answers PersistedQueryNotFound, the client sends the text with the hash, and from then on
// the hash is enough. Texts are kept per instance (a miss on another instance costs one resend)
// and per credential's store: a principal's API keys share one, and an access token has its
// grants' own (as its idempotency keys do: idempotency-scope.ts), which a token minted again for
// the same grants — the same end user's page after a reload — finds again. A hash finds only a text
// sent to its own store, so no one runs another's text or learns from a hit that someone sent it:
// not another principal, nor an end user's page what another end user's or the backend sent. A
// request refused by authentication or a rate limit never reaches the store.
// With TRUSTED_DOCUMENTS_ONLY only trusted texts are kept: a hash never admits anything the text
// would not.
//
// A text is kept only once it has parsed and passed validation, the query limits included (the
// token limit is the parser's, depth, aliases and cost are validation rules): a text the server
// refuses is never kept, however many are sent. What is kept is bounded by count and by bytes, and
// each principal's texts (all its stores' together) by a quarter of each: a principal at its share
// makes room with its own least recently used texts, never another's, so however many texts one
// principal sends, the others' stay until the whole store is full of texts used more recently.
import { createHash } from "node:crypto";
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import { LRUCache } from "lru-cache";
import { idempotencyScopeOf } from "../domain/principal/idempotency-scope.js";
import type { Actor } from "../domain/principal/principal-service.js";
import { PrincipalShares } from "./principal-shares.js";

/** How many texts are kept at most, least recently used first out. */
export const APQ_MAX_TEXTS = 1_000;
/** How many bytes the kept texts and their hashes may take at most, all together (two a character). */
export const APQ_MAX_BYTES = 8 * 1024 * 1024;
/** How many texts one principal's requests keep at most: a quarter of APQ_MAX_TEXTS (every SDK operation fits). */
export const APQ_MAX_TEXTS_PER_PRINCIPAL = 250;
/** How many bytes one principal's texts and their hashes may take at most: a quarter of APQ_MAX_BYTES. */
export const APQ_MAX_BYTES_PER_PRINCIPAL = 2 * 1024 * 1024;

/** Where a request's texts are kept: the principal's store for its API keys, the grants' own for an access token. */
export const persistedQueriesStoreOf = (actor: Pick<Actor, "principalId" | "keyId" | "access">): string =>
  actor.access ? idempotencyScopeOf(actor) : actor.principalId;

export type AutomaticPersistedQueriesOptions = {
  /**
   * The principal a request acts as, whose share its texts count against, and the store they are
   * kept in (persistedQueriesStoreOf). Authentication has admitted the request when this is asked.
   */
  keeperOf(request: Request): Promise<{ principal: string; store: string }>;
  /** Whether a text may be kept (with TRUSTED_DOCUMENTS_ONLY: only a trusted document's). */
  keeps(query: string): boolean;
  /** How many texts are kept, least recently used first out. */
  max?: number;
  /** How many bytes the kept texts and their hashes may take (two a character), least recently used first out. */
  maxBytes?: number;
  /** How many texts one principal's requests keep; at it, the principal's own least recently used go. */
  maxPerPrincipal?: number;
  /** How many bytes one principal's texts and their hashes may take; past it, the principal's own least recently used go. */
  maxBytesPerPrincipal?: number;
};

type PersistedQuery = { version?: unknown; sha256Hash?: unknown };

const error = (message: string, code: string) => new GraphQLError(message, { extensions: { code } });

export function automaticPersistedQueries(options: AutomaticPersistedQueriesOptions): Plugin {
  const { keeperOf, keeps, max = APQ_MAX_TEXTS, maxBytes = APQ_MAX_BYTES } = options;
  const { maxPerPrincipal = APQ_MAX_TEXTS_PER_PRINCIPAL, maxBytesPerPrincipal = APQ_MAX_BYTES_PER_PRINCIPAL } = options;
  // Counted as V8 may hold it: two bytes a character (one beyond Latin-1 makes the whole string
  // two-byte), and the key it is kept under (its store and the hash).
  const sizeOf = (text: string, key: string) => 2 * (text.length + key.length);
  const texts: LRUCache<string, string> = new LRUCache<string, string>({
    max,
    maxSize: maxBytes,
    sizeCalculation: sizeOf,
    // A text out of the store, by the store's bounds or its principal's, is out of its principal's share.
    dispose: (_text, key) => shares.release(key),
  });
  const shares = new PrincipalShares({ max: maxPerPrincipal, maxBytes: maxBytesPerPrincipal }, (key) => texts.delete(key));
  const keep = (principal: string, key: string, query: string) => {
    // The same hash is the same text (a key is its store and the hash): it is only used again.
    if (texts.get(key) !== undefined) return shares.used(principal, key);
    const size = sizeOf(query, key);
    if (size > Math.min(maxBytes, maxBytesPerPrincipal)) return;
    // At its share, the principal's own least recently used texts make room, never another's.
    shares.hold(principal, key, size);
    // Past the whole store's bounds, its least recently used text goes, whoever's it is.
    texts.set(key, query);
    if (texts.peek(key) !== query) shares.release(key);
  };
  /** The text sent with its hash, by request, until its validation tells whether it is kept. */
  const sent = new WeakMap<Request, { principal: string; key: string; query: string }>();
  return {
    // Refusals are thrown: the hooks after this one (trusted documents) must not see the request.
    onParams({ params, request, setParams }) {
      const persisted = (params.extensions as { persistedQuery?: PersistedQuery } | undefined)?.persistedQuery;
      if (!persisted || typeof persisted !== "object") return;
      const hash = persisted.sha256Hash;
      if (persisted.version !== 1 || typeof hash !== "string" || !/^[0-9a-f]{64}$/.test(hash)) {
        throw error("extensions.persistedQuery must be { version: 1, sha256Hash: <64 hex digits> }.", "PERSISTED_QUERY_INVALID");
      }
      const query = typeof params.query === "string" && params.query !== "" ? params.query : undefined;
      if (query !== undefined && createHash("sha256").update(query).digest("hex") !== hash) {
        throw error("provided sha does not match query", "PERSISTED_QUERY_HASH_MISMATCH");
      }
      return keeperOf(request).then(({ principal, store }) => {
        const key = `${store}:${hash}`;
        if (query !== undefined) return void sent.set(request, { principal, key, query });
        const known = texts.get(key);
        // The message and code Apollo's PersistedQueryLink looks for before it sends the text.
        if (known === undefined) throw error("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND");
        shares.used(principal, key);
        setParams({ ...params, query: known });
      });
    },
    // Reached only by a text that parsed within the token limit; kept only if it is valid too.
    onValidate({ context }) {
      const request = (context as { request?: Request }).request;
      const text = request && sent.get(request);
      if (!text) return;
      sent.delete(request);
      return ({ valid }) => {
        if (valid && keeps(text.query)) keep(text.principal, text.key, text.query);
      };
    },
  };
}
