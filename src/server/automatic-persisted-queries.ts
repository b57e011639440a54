// Automatic persisted queries, as Apollo Client's PersistedQueryLink speaks them: a request names
// its document by `extensions.persistedQuery.sha256Hash` alone; a server that does not know the
// hash answers PersistedQueryNotFound, the client sends the text with the hash, and from then on
// the hash is enough. Texts are kept per instance (a miss on another instance costs one resend).
// With TRUSTED_DOCUMENTS_ONLY only trusted texts are kept: a hash never admits anything the text
// would not.
import { createHash } from "node:crypto";
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import { LRUCache } from "lru-cache";

export type AutomaticPersistedQueriesOptions = {
  /** Whether a text may be kept (with TRUSTED_DOCUMENTS_ONLY: only a trusted document's). */
  keeps(query: string): boolean;
  /** How many texts are kept, least recently used first out. */
  max?: number;
};

type PersistedQuery = { version?: unknown; sha256Hash?: unknown };

const error = (message: string, code: string) => new GraphQLError(message, { extensions: { code } });

export function automaticPersistedQueries({ keeps, max = 1_000 }: AutomaticPersistedQueriesOptions): Plugin {
  const texts = new LRUCache<string, string>({ max });
  return {
    // Refusals are thrown: the hooks after this one (trusted documents) must not see the request.
    onParams({ params, setParams }) {
      const persisted = (params.extensions as { persistedQuery?: PersistedQuery } | undefined)?.persistedQuery;
      if (!persisted || typeof persisted !== "object") return;
      const hash = persisted.sha256Hash;
      if (persisted.version !== 1 || typeof hash !== "string" || !/^[0-9a-f]{64}$/.test(hash)) {
        throw error("extensions.persistedQuery must be { version: 1, sha256Hash: <64 hex digits> }.", "PERSISTED_QUERY_INVALID");
      }
      if (typeof params.query === "string" && params.query !== "") {
        if (createHash("sha256").update(params.query).digest("hex") !== hash) {
          throw error("provided sha does not match query", "PERSISTED_QUERY_HASH_MISMATCH");
        }
        if (keeps(params.query)) texts.set(hash, params.query);
        return;
      }
      const known = texts.get(hash);
      // The message and code Apollo's PersistedQueryLink looks for before it sends the text.
      if (known === undefined) throw error("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND");
      setParams({ ...params, query: known });
    },
  };
}
