// Automatic persisted queries kept per principal (an access token's in its own store), within a
// share of the store that all of a principal's stores count against: a principal at its share
// (APQ_MAX_TEXTS_PER_PRINCIPAL texts, APQ_MAX_BYTES_PER_PRINCIPAL bytes) makes room with its own
// least recently used texts, so another principal's texts stay however many one principal sends;
// the whole store's bounds still hold, least recently used first out, whoever's.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSchema, createYoga } from "graphql-yoga";
import { describe, expect, it } from "vitest";
import {
  APQ_MAX_BYTES_PER_PRINCIPAL,
  APQ_MAX_TEXTS,
  APQ_MAX_TEXTS_PER_PRINCIPAL,
  automaticPersistedQueries,
  type AutomaticPersistedQueriesOptions,
} from "../../src/server/automatic-persisted-queries.js";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const apq = (text: string) => ({ persistedQuery: { version: 1, sha256Hash: sha(text) } });

type Answer = { data?: { a: number }; errors?: { message: string }[] };

/**
 * A request's keeper: `principal` or `principal|store` (an access token's store; the principal's own
 * without it), sent in the `x-keeper` header.
 */
const keeperOf = (request: Request) => {
  const keeper = request.headers.get("x-keeper") ?? "";
  return { principal: keeper.split("|")[0]!, store: keeper };
};

/** A server whose requests act as the principal their `x-keeper` header names, kept in its store. */
function server(options: Partial<AutomaticPersistedQueriesOptions> = {}) {
  const yoga = createYoga({
    schema: createSchema({ typeDefs: "type Query { a: Int }", resolvers: { Query: { a: () => 1 } } }),
    plugins: [automaticPersistedQueries({ keeperOf: async (r) => keeperOf(r), keeps: () => true, ...options })],
  });
  const post = async (keeper: string, body: unknown) => {
    const init = { method: "POST", headers: { "content-type": "application/json", "x-keeper": keeper }, body: JSON.stringify(body) };
    return (await (await yoga.fetch("http://dossier.test/graphql", init)).json()) as Answer;
  };
  return {
    /** Sends each text with its hash, `width` at a time (one batch kept after another); each must run. */
    send: async (keeper: string, queries: string[], width = 1) => {
      for (let i = 0; i < queries.length; i += width) {
        const answers = await Promise.all(queries.slice(i, i + width).map((query) => post(keeper, { query, extensions: apq(query) })));
        expect(answers).toEqual(answers.map(() => ({ data: { a: 1 } })));
      }
    },
    /** Which of these texts the keeper's hash alone still finds (and runs); asked 50 at a time. */
    found: async (keeper: string, queries: string[]) => {
      const answers: Answer[] = [];
      for (let i = 0; i < queries.length; i += 50)
        answers.push(...(await Promise.all(queries.slice(i, i + 50).map((query) => post(keeper, { extensions: apq(query) })))));
      expect(answers.every((answer) => answer.data?.a === 1 || answer.errors?.[0]?.message === "PersistedQueryNotFound")).toBe(true);
      return queries.filter((_, i) => answers[i]!.data?.a === 1);
    },
  };
}

const texts = (name: string, count: number, pad = 0) => Array.from({ length: count }, (_, i) => `query ${name}${i} { a }${pad ? ` # ${"x".repeat(pad)}` : ""}`);

describe("automatic persisted queries, a share each principal", () => {
  it("keeps another principal's texts however many texts one principal sends: it makes room with its own oldest", async () => {
    const { send, found } = server();
    const bobs = texts("Bob", 3);
    await send("bob", bobs);
    const alices = texts("Alice", APQ_MAX_TEXTS);
    await send("alice", alices, 50);
    expect(await found("bob", bobs)).toEqual(bobs);
    // Sent 50 at a time: the last batches, as many texts as her share, were the last kept.
    expect(APQ_MAX_TEXTS_PER_PRINCIPAL % 50).toBe(0);
    // Alice keeps her newest texts, as many as her share (the one sent before them is gone).
    expect(await found("alice", alices.slice(-APQ_MAX_TEXTS_PER_PRINCIPAL - 1))).toEqual(alices.slice(-APQ_MAX_TEXTS_PER_PRINCIPAL));
  });

  it("keeps another principal's texts when one sends the same texts and then churns: each keeps its own copy", async () => {
    const { send, found } = server();
    const shared = texts("Shared", 5);
    await send("bob", shared);
    await send("alice", shared);
    await send("alice", texts("Alice", APQ_MAX_TEXTS_PER_PRINCIPAL + 50), 50);
    expect(await found("bob", shared)).toEqual(shared);
    expect(await found("alice", shared)).toEqual([]);
  });

  it("bounds a principal's bytes by its share: past it, its own least recently used texts go first", async () => {
    const { send, found } = server();
    const pad = 100_000;
    const bobs = texts("Bob", 2, pad);
    await send("bob", bobs);
    const alices = texts("Alice", 60, pad);
    await send("alice", alices);
    // A text and its key, two bytes a character.
    const each = 2 * (alices[0]!.length + "alice:".length + 64);
    const fit = Math.floor(APQ_MAX_BYTES_PER_PRINCIPAL / each);
    expect(fit).toBeLessThan(alices.length);
    expect(await found("bob", bobs)).toEqual(bobs);
    expect(await found("alice", alices)).toEqual(alices.slice(-fit));
    // A text found again is the principal's most recently used: the next new one takes the oldest other's place.
    const [oldest, second] = alices.slice(-fit);
    expect(await found("alice", [oldest!])).toEqual([oldest]);
    await send("alice", texts("Later", 1, pad));
    expect(await found("alice", [oldest!, second!])).toEqual([oldest]);
  });

  it("fits every SDK operation in one principal's share, with room for the __typename Apollo adds and a long principal id", () => {
    const operations = Object.values(JSON.parse(readFileSync("sdk/generated/persisted-documents.json", "utf8")) as Record<string, string>);
    expect(operations.length).toBeLessThanOrEqual(APQ_MAX_TEXTS_PER_PRINCIPAL);
    const bytes = operations.reduce((sum, text) => sum + 2 * (text.length + 500 + 64 + 100), 0);
    expect(bytes).toBeLessThanOrEqual(APQ_MAX_BYTES_PER_PRINCIPAL);
  });

  it("keeps an access token's texts in its own store, yet within its principal's one share", async () => {
    const { send, found } = server({ maxPerPrincipal: 4 });
    const backend = texts("Backend", 2);
    await send("alice", backend);
    // An end user's page learns nothing of what the backend sent, nor the backend of the page's.
    expect(await found("alice|page", backend)).toEqual([]);
    const page = texts("Page", 3);
    await send("alice|page", page);
    expect(await found("alice", page)).toEqual([]);
    expect(await found("alice|another-page", page)).toEqual([]);
    // Five texts of alice's, in a share of four: her least recently used, the backend's first, went.
    expect(await found("alice", backend)).toEqual(backend.slice(1));
    expect(await found("alice|page", page)).toEqual(page);
  });

  it("still keeps at most the store's texts all together, least recently used first out, whoever's", async () => {
    const { send, found } = server({ max: 10, maxPerPrincipal: 4 });
    const [a, b, c] = [texts("A", 4), texts("B", 4), texts("C", 4)];
    await send("a", a);
    await send("b", b);
    await send("c", c);
    // Twelve texts in a store of ten, none past its principal's share: the two least recently used, a's, went.
    expect(await found("a", a)).toEqual(a.slice(2));
    expect(await found("b", b)).toEqual(b);
    expect(await found("c", c)).toEqual(c);
  });
});
