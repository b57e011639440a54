// A7: malicious queries in the style of graphql-cop, sent over HTTP (and graphql-ws) to a
// listening server. Each is refused with a clear message and an extensions code, cheaply, and
// the server keeps answering ordinary requests afterwards.
import { type DocumentNode, getIntrospectionQuery, parse, print, validate } from "graphql";
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import * as sdk from "../../sdk/generated/graphql.js";
import { schema } from "../../src/graphql/schema.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

type Answer = { status: number; body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] } };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp("pglite", { listen: true });
});
afterAll(async () => {
  await t.close();
});

async function post(body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(t.server!.url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  return { status: response.status, body: (await response.json()) as Answer["body"] };
}

const query = (text: string, variables?: Record<string, unknown>) => post(JSON.stringify({ query: text, variables }));
const codes = (answer: Answer) => (answer.body.errors ?? []).map((error) => error.extensions?.code);

/** `{ __type(name: "Query") { fields { type { fields { type { … name } } } } } }`, `levels` pairs deep. */
function nestedIntrospection(levels: number): string {
  let selection = "name";
  for (let i = 0; i < levels; i += 1) selection = `fields { type { ${selection} } }`;
  return `{ __type(name: "Query") { ${selection} } }`;
}

/** Nested data fields: run → conversation → runs → edges → node → conversation → … */
function nestedRuns(levels: number): string {
  let selection = "id";
  for (let i = 0; i < levels; i += 1) selection = `conversation { runs(first: 1) { edges { node { ${selection} } } } }`;
  return `query Deep($id: ID!) { run(id: $id) { ${selection} } }`;
}

describe("malicious queries are refused, and the server is unharmed", () => {
  it("deep nesting: QUERY_TOO_DEEP, for data fields and introspection alike", async () => {
    const deep = await query(nestedRuns(10), { id: "UnVuOm5vbmU=" });
    expect(codes(deep)).toContain("QUERY_TOO_DEEP");
    expect(deep.body.errors![0]!.message).toMatch(new RegExp(`^Query depth limit of ${DEFAULT_QUERY_LIMITS.maxDepth} exceeded, found \\d+\\.$`));
    expect(deep.body.data).toBeUndefined();
    expect(codes(await query(nestedIntrospection(20)))).toContain("QUERY_TOO_DEEP");
  });

  it("alias overloading: TOO_MANY_ALIASES", async () => {
    const aliases = Array.from({ length: 500 }, (_, i) => `a${i}: __typename`).join(" ");
    const answer = await query(`{ ${aliases} }`);
    expect(codes(answer)).toContain("TOO_MANY_ALIASES");
    expect(answer.body.errors!.map((error) => error.message)).toContain("Aliases limit of 30 exceeded, found 500.");
  });

  it("circular fragments: refused by validation without recursing", async () => {
    const answer = await query("query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }");
    expect(answer.body.errors!.map((error) => error.message)).toContain('Cannot spread fragment "A" within itself via "B".');
    expect(answer.body.data).toBeUndefined();
  });

  it("a document of too many tokens: TOO_MANY_TOKENS, before it is parsed whole", async () => {
    const answer = await query(`{ ${"__typename ".repeat(20_000)} }`);
    expect(codes(answer)).toEqual(["TOO_MANY_TOKENS"]);
    expect(answer.body.errors![0]!.message).toBe(`The document has more than ${DEFAULT_QUERY_LIMITS.maxTokens} tokens; send a smaller one.`);
  });

  it("a document of too many comments: TOO_MANY_TOKENS too (each comment is parsed and kept), while as many as the token limit pass", async () => {
    const comments = (n: number) => `{ __typename ${"#\n".repeat(n)}}`;
    const answer = await query(comments(DEFAULT_QUERY_LIMITS.maxTokens + 1));
    expect(codes(answer)).toEqual(["TOO_MANY_TOKENS"]);
    expect(answer.body.errors![0]!.message).toBe(`The document has more than ${DEFAULT_QUERY_LIMITS.maxTokens} comments; send a smaller one.`);
    expect((await query(comments(DEFAULT_QUERY_LIMITS.maxTokens))).body.data).toEqual({ __typename: "Query" });
  });

  it("huge strings: a body over the limit is refused with 413 before it is read", async () => {
    const huge = "x".repeat(DEFAULT_QUERY_LIMITS.maxBodyBytes + 1);
    const answer = await query(`query ($q: String!) { __typename }`, { q: huge });
    expect(answer.status).toBe(413);
    expect(codes(answer)).toEqual(["REQUEST_TOO_LARGE"]);
    expect(answer.body.errors![0]!.message).toMatch(/at most 1048576 are accepted/);
  });

  it("a body of undeclared length (chunked) is refused with 411", async () => {
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(JSON.stringify({ query: "{ __typename }" })));
        controller.close();
      },
    });
    const response = await fetch(t.server!.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(411);
    expect(((await response.json()) as Answer["body"]).errors![0]!.extensions!.code).toBe("LENGTH_REQUIRED");
  });

  it("batched requests: refused, one operation per request", async () => {
    const batch = JSON.stringify(Array.from({ length: 100 }, () => ({ query: "{ __typename }" })));
    const answer = await post(batch);
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([{ message: "Batching is not supported.", extensions: { code: "BAD_REQUEST" } }]);
  });

  it("first: 100000 is refused, not clamped, whether written inline, as a variable or as a variable's default", async () => {
    const refusal = 'first: 100000 asks for more than 200 items; page through the connection with "after" instead.';
    const inline = await query("{ workspaces(first: 100000) { edges { node { id } } } }");
    expect(codes(inline)).toEqual(["PAGE_TOO_LARGE"]);
    expect(inline.body.errors![0]!.message).toBe(refusal);
    // The same document first within the limit: its arguments are looked up once, their values each time.
    expect(codes(await query("query ($n: Int) { workspaces(first: $n) { edges { node { id } } } }", { n: 5 }))).toEqual([]);
    const variable = await query("query ($n: Int) { workspaces(first: $n) { edges { node { id } } } }", { n: 100_000 });
    expect(codes(variable)).toEqual(["PAGE_TOO_LARGE"]);
    expect(variable.body.errors![0]!.message).toBe(refusal);
    expect(variable.body.data ?? null).toBeNull();
    const byDefault = await query("query ($n: Int = 100000) { workspaces(first: $n) { edges { node { id } } } }");
    expect(codes(byDefault)).toEqual(["PAGE_TOO_LARGE"]);
    expect(byDefault.body.data ?? null).toBeNull();
  });

  it("a query within depth, aliases and page sizes but of excessive cost: QUERY_TOO_COSTLY, its pages inline or from variables", async () => {
    // 30 × (1 + 100 conversations × (2 + 100 runs × 3)) field values: far past the limit, each page allowed.
    const wide = (page: string) =>
      Array.from({ length: 30 }, (_, i) => `c${i}: conversations(first: ${page}) { edges { node { runs(first: ${page}) { edges { node { id } } } } } }`).join(
        " ",
      );
    const inline = await query(`{ ${wide("100")} }`);
    const variables = await query(`query ($n: Int) { ${wide("$n")} }`, { n: 100 });
    const byDefault = await query(`query ($n: Int = 100) { ${wide("$n")} }`);
    for (const answer of [inline, variables, byDefault]) {
      expect(codes(answer)).toEqual(["QUERY_TOO_COSTLY"]);
      expect(answer.body.errors![0]!.message).toMatch(
        new RegExp(`^The query asks for 609060 field values at the page sizes it passes .*; at most ${DEFAULT_QUERY_LIMITS.maxCost} are allowed\\.`),
      );
      expect(answer.body.data ?? null).toBeNull();
    }
    // The same document with small pages runs.
    expect(codes(await query(`query ($n: Int) { ${wide("$n")} }`, { n: 2 }))).toEqual([]);
  });

  it("over graphql-ws, a deep operation is refused with the same error and the socket stays usable", async () => {
    const socket = createWsClient({ url: t.server!.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    try {
      const refused = await withTimeout(
        socket
          .iterate({ query: nestedIntrospection(20) })
          .next()
          .then(
            () => undefined,
            (errors: unknown) => errors as { message: string; extensions?: { code?: string } }[],
          ),
        10_000,
      );
      expect(refused?.map((error) => error.extensions?.code)).toContain("QUERY_TOO_DEEP");
      const tooManyTokens = await withTimeout(
        socket
          .iterate({ query: `{ ${"__typename ".repeat(20_000)} }` })
          .next()
          .then(
            () => undefined,
            (errors: unknown) => errors as { extensions?: { code?: string } }[],
          ),
        10_000,
      );
      expect(tooManyTokens?.map((error) => error.extensions?.code)).toEqual(["TOO_MANY_TOKENS"]);
      const wide = Array.from(
        { length: 30 },
        (_, i) => `c${i}: conversations(first: $n) { edges { node { runs(first: $n) { edges { node { id } } } } } }`,
      ).join(" ");
      // Refused once the variables are known: a result with the error, before anything runs.
      const tooCostly = await withTimeout(socket.iterate({ query: `query ($n: Int) { ${wide} }`, variables: { n: 100 } }).next(), 10_000);
      const costly = tooCostly.value as { data?: unknown; errors?: { extensions?: { code?: string } }[] };
      expect(costly.errors?.map((error) => error.extensions?.code)).toEqual(["QUERY_TOO_COSTLY"]);
      expect(costly.data ?? null).toBeNull();
      const fine = await withTimeout(socket.iterate({ query: "{ __typename }" }).next(), 10_000);
      expect(fine.value).toEqual({ data: { __typename: "Query" } });
    } finally {
      await socket.dispose();
    }
  });

  it("over graphql-ws, a message over the body limit closes the socket before anything parses it", async () => {
    const socket = new WebSocket(t.server!.wsUrl, "graphql-transport-ws");
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    const closed = new Promise<number>((resolve) => socket.once("close", (code) => resolve(code)));
    socket.send(JSON.stringify({ type: "connection_init", payload: { padding: "x".repeat(DEFAULT_QUERY_LIMITS.maxBodyBytes) } }));
    expect(await withTimeout(closed, 10_000)).toBe(1009); // "message too big"
  });

  it("after all of it, ordinary requests and health checks still succeed", async () => {
    expect((await query("{ __typename }")).body).toEqual({ data: { __typename: "Query" } });
    expect((await fetch(t.server!.url.replace("/graphql", "/health"))).status).toBe(200);
    for (const path of ["/ready", "/ready?probe=1"]) {
      const ready = await fetch(t.server!.url.replace("/graphql", path));
      expect([ready.status, await ready.json()]).toEqual([200, { status: "ready" }]);
    }
    const workspace = await createWorkspace(t.client, "Still serving");
    expect(workspace.id).toBeTruthy();
  });
});

describe("the default limits", () => {
  it("accept every operation of the SDK", async () => {
    const limits = t.app.yoga.getEnveloped({});
    const documents = Object.entries(sdk).filter(([name]) => name.endsWith("Document")) as [string, DocumentNode][];
    expect(documents.length).toBeGreaterThan(20);
    for (const [name, document] of documents) {
      const parsed = limits.parse(print(document));
      const errors = limits.validate(limits.schema, parsed).map((error: { message: string }) => error.message);
      expect(errors, name).toEqual([]);
      expect(validate(schema, parse(print(document)))).toEqual([]);
    }
  });

  it("accept GraphiQL's introspection query", async () => {
    const answer = await query(getIntrospectionQuery());
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data).toHaveProperty("__schema");
  });
});
