// Automatic persisted queries as Apollo's PersistedQueryLink speaks them: a hash alone is answered
// PersistedQueryNotFound, the text sent with its hash is executed and kept, and the hash alone then
// runs it. With TRUSTED_DOCUMENTS_ONLY nothing but a trusted text is kept, and an SDK operation's
// text as Apollo prints it (with __typename added) counts as that operation. A text the server
// refuses (over the token limit, or invalid) is never kept, and what one principal keeps is bounded
// by bytes: its oldest texts go first, and every text still found runs. Texts are kept per
// principal: a hash finds only its own principal's text, and a request without a valid key is 401
// whatever was sent. An access token's texts are its grants' own: an end user's page learns nothing
// of what the backend or another end user's page sent, and finds its own again after a reload.
import { createHash } from "node:crypto";
import { parse, print, visit } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateAccessTokenDocument, ViewerDocument } from "../../sdk/generated/graphql.js";
import { loadConfig } from "../../src/config.js";
import { APQ_MAX_BYTES_PER_PRINCIPAL } from "../../src/server/automatic-persisted-queries.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

type Answer = { data?: Record<string, unknown>; errors?: { message: string; extensions?: { code?: string } }[] };

async function post(url: string, body: unknown, send: typeof fetch = fetch): Promise<Answer> {
  const response = await send(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return (await response.json()) as Answer;
}

/** The SDK's Viewer operation as Apollo Client sends it: printed, with __typename in every selection set but the root. */
function apolloText(): string {
  return print(
    visit(parse(print(ViewerDocument)), {
      SelectionSet: (node, _key, parent) =>
        (parent as { kind?: string }).kind === "OperationDefinition" || node.selections.some((s) => s.kind === "Field" && s.name.value === "__typename")
          ? undefined
          : { ...node, selections: [...node.selections, { kind: "Field", name: { kind: "Name", value: "__typename" } }] },
    }),
  );
}

const apq = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

/** `work` for every item, `width` at a time, answers in the items' order. */
async function inBatches<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const answers: R[] = [];
  for (let i = 0; i < items.length; i += width) answers.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return answers;
}

describe("automatic persisted queries", () => {
  let open: TestApp;
  let only: TestApp;
  beforeAll(async () => {
    open = await startTestApp("pglite", { listen: true });
    only = await startTestApp("pglite", { listen: true, trustedDocuments: loadConfig({ TRUSTED_DOCUMENTS_ONLY: "true" }).trustedDocuments });
  });
  afterAll(async () => {
    await open?.close();
    await only?.close();
  });

  it("a hash alone misses with PersistedQueryNotFound, the text with its hash runs and is kept, then the hash alone runs it", async () => {
    const query = "query Me { viewer { name } }";
    const miss = await post(open.server!.url, { operationName: "Me", extensions: apq(sha(query)) });
    expect(miss.errors).toEqual([
      expect.objectContaining({ message: "PersistedQueryNotFound", extensions: expect.objectContaining({ code: "PERSISTED_QUERY_NOT_FOUND" }) }),
    ]);
    const full = await post(open.server!.url, { query, operationName: "Me", extensions: apq(sha(query)) });
    expect(full).toEqual({ data: { viewer: { name: expect.any(String) } } });
    const hit = await post(open.server!.url, { operationName: "Me", extensions: apq(sha(query)) });
    expect(hit).toEqual(full);
    const wrong = await post(open.server!.url, { query, extensions: apq(sha("something else")) });
    expect(wrong.errors?.[0]?.extensions?.code).toBe("PERSISTED_QUERY_HASH_MISMATCH");
  });

  it("with TRUSTED_DOCUMENTS_ONLY an arbitrary text is refused and never kept; an SDK operation as Apollo prints it runs and is kept", async () => {
    const query = "query Me { viewer { name } }";
    const refused = await post(only.server!.url, { query, extensions: apq(sha(query)) });
    expect(refused.errors?.[0]?.extensions?.code).toBe("TRUSTED_DOCUMENT_REQUIRED");
    const stillMissing = await post(only.server!.url, { extensions: apq(sha(query)) });
    expect(stillMissing.errors?.[0]?.message).toBe("PersistedQueryNotFound");

    const text = apolloText();
    expect(text).toContain("__typename");
    const miss = await post(only.server!.url, { operationName: "Viewer", extensions: apq(sha(text)) });
    expect(miss.errors?.[0]?.message).toBe("PersistedQueryNotFound");
    const full = await post(only.server!.url, { query: text, operationName: "Viewer", extensions: apq(sha(text)) });
    expect(full.errors).toBeUndefined();
    expect(full.data?.viewer).toMatchObject({ __typename: "Principal", name: expect.any(String) });
    expect(await post(only.server!.url, { operationName: "Viewer", extensions: apq(sha(text)) })).toEqual(full);
  });

  /** A request to `open` in process, without a socket. */
  const inProcess = (body: unknown) =>
    post("http://dossier.test/graphql", body, (async (input: string, init?: RequestInit) => open.app.yoga.fetch(new Request(input, init))) as typeof fetch);

  it("a text sent with its hash but refused (over the token limit, or invalid) is never kept: its hash alone is PersistedQueryNotFound", async () => {
    // 1,000 distinct texts, each a few tokens over the limit, then a few that parse but do not validate.
    const tooLong = Array.from({ length: 1_000 }, (_, i) => `query Q${i} { ${"a ".repeat(DEFAULT_QUERY_LIMITS.maxTokens)} }`);
    const invalid = Array.from({ length: 10 }, (_, i) => `query I${i} { viewer { noSuchField${i} } }`);
    const refused = await inBatches([...tooLong, ...invalid], 50, (query) => inProcess({ query, extensions: apq(sha(query)) }));
    expect(refused.map((answer) => answer.errors?.[0]?.extensions?.code)).toEqual([
      ...tooLong.map(() => "TOO_MANY_TOKENS"),
      ...invalid.map(() => "GRAPHQL_VALIDATION_FAILED"),
    ]);
    const lookups = await inBatches([...tooLong, ...invalid], 50, (query) => inProcess({ extensions: apq(sha(query)) }));
    expect(lookups.filter((answer) => answer.errors?.[0]?.message === "PersistedQueryNotFound")).toHaveLength(tooLong.length + invalid.length);
  });

  it("keeps at most APQ_MAX_BYTES_PER_PRINCIPAL of one principal's texts and hashes: its oldest texts go first, and every text its hash still finds runs", async () => {
    const size = 100_000;
    const texts = Array.from({ length: 30 }, (_, i) => {
      const head = `query Big${i} { viewer { name } } # `;
      return head + "x".repeat(size - head.length);
    });
    // One after another: the order they are kept in is the order they were sent in.
    const sent = await inBatches(texts, 1, (query) => inProcess({ query, extensions: apq(sha(query)) }));
    expect(sent.every((answer) => answer.errors === undefined && typeof answer.data?.viewer === "object")).toBe(true);
    const lookups = await inBatches(texts, 10, (query) => inProcess({ extensions: apq(sha(query)) }));
    const found = lookups.flatMap((answer, i) => (answer.errors?.[0]?.message === "PersistedQueryNotFound" ? [] : [i]));
    // Exactly the newest texts that fit in the budget (two bytes a character, hash included) are found, and each one runs.
    const fit = Math.floor(APQ_MAX_BYTES_PER_PRINCIPAL / (2 * (size + sha(texts[0]!).length)));
    expect(fit).toBeLessThan(texts.length);
    expect(found).toEqual(Array.from({ length: fit }, (_, i) => texts.length - fit + i));
    expect(found.map((i) => lookups[i])).toEqual(found.map(() => ({ data: { viewer: { name: expect.any(String) } } })));
  });
});

describe("automatic persisted queries, where keys are required", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true });
  });
  afterAll(async () => t?.close());

  const send = async (body: unknown, key?: string) => {
    const response = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      }),
    );
    return { status: response.status, answer: (await response.json()) as Answer };
  };
  const codeOf = ({ status, answer }: { status: number; answer: Answer }) => `${status} ${answer.errors?.[0]?.extensions?.code ?? "data"}`;

  it("answers a keyless hash 401, whether or not anyone sent its text: the store tells a stranger nothing", async () => {
    const alice = await t.createPrincipal("alice");
    const query = "query Secret { workspaces(first: 3) { edges { node { id title } } } }";
    expect(codeOf(await send({ extensions: apq(sha(query)) }))).toBe("401 UNAUTHENTICATED");
    expect(codeOf(await send({ query, extensions: apq(sha(query)) }, alice))).toBe("200 data");
    expect(codeOf(await send({ extensions: apq(sha(query)) }))).toBe("401 UNAUTHENTICATED");
    expect(codeOf(await send({ extensions: apq(sha(query)) }, "dsk_not_a_key"))).toBe("401 UNAUTHENTICATED");
  });

  it("finds a text only for the principal who sent it: another's hash alone is PersistedQueryNotFound until they send the text", async () => {
    const [alice, bob] = [await t.createPrincipal("alice"), await t.createPrincipal("bob")];
    const query = "query Mine { viewer { name } }";
    expect((await send({ query, extensions: apq(sha(query)) }, alice)).answer).toEqual({ data: { viewer: { name: "alice" } } });
    expect((await send({ extensions: apq(sha(query)) }, alice)).answer).toEqual({ data: { viewer: { name: "alice" } } });
    const missed = await send({ extensions: apq(sha(query)) }, bob);
    expect(missed.answer.errors).toEqual([
      expect.objectContaining({ message: "PersistedQueryNotFound", extensions: expect.objectContaining({ code: "PERSISTED_QUERY_NOT_FOUND" }) }),
    ]);
    expect((await send({ query, extensions: apq(sha(query)) }, bob)).answer).toEqual({ data: { viewer: { name: "bob" } } });
    expect((await send({ extensions: apq(sha(query)) }, bob)).answer).toEqual({ data: { viewer: { name: "bob" } } });
  });

  it("keeps an access token's texts apart from its principal's and from other grants': a token minted again for the same grants finds them", async () => {
    const alice = await t.createPrincipal("alice");
    const [one, two] = [await createWorkspace(t.as(alice), "One"), await createWorkspace(t.as(alice), "Two")];
    const mint = async (workspaceId: string) =>
      expectType(
        (await t.as(alice).request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspaceId, operations: ["READ"] }] } })).createAccessToken,
        "CreateAccessTokenSuccess",
      ).token;
    const [page, reloaded, another] = [await mint(one.id), await mint(one.id), await mint(two.id)];
    const found = async (query: string, key: string) => codeOf(await send({ extensions: apq(sha(query)) }, key));
    // The backend's text: the page's hash alone misses it, as if never sent.
    const backends = "query Backend { viewer { id } }";
    expect(codeOf(await send({ query: backends, extensions: apq(sha(backends)) }, alice))).toBe("200 data");
    expect(await found(backends, alice)).toBe("200 data");
    expect(await found(backends, page)).toBe("200 PERSISTED_QUERY_NOT_FOUND");
    // The page's text: found by the page, and by its token minted again for the same grants (a reload).
    const pages = `query Page { node(id: "${one.id}") { id } }`;
    expect(codeOf(await send({ query: pages, extensions: apq(sha(pages)) }, page))).toBe("200 data");
    expect([await found(pages, page), await found(pages, reloaded)]).toEqual(["200 data", "200 data"]);
    // Not by another end user's page (other grants), nor by the backend.
    expect([await found(pages, another), await found(pages, alice)]).toEqual(["200 PERSISTED_QUERY_NOT_FOUND", "200 PERSISTED_QUERY_NOT_FOUND"]);
  });
});
