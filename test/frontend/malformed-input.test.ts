// Malformed ids and cursors (a NUL inside, bytes that are not UTF-8) are the client's mistake, told
// as such — never "Unexpected error." from a database that refused them — and every body type the
// README lists as executed is executed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admit, createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const b64url = (text: string) => Buffer.from(text, "utf8").toString("base64url");

describe("malformed ids, cursors and body types", () => {
  let t: TestApp;
  let key: string;
  let workspaceId: string;
  const post = async (body: unknown, contentType = "application/json") => {
    const response = await fetch(t.server!.url, {
      method: "POST",
      headers: { "content-type": contentType, accept: "application/graphql-response+json, application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as { data?: Record<string, unknown>; errors?: { message: string; extensions?: { code?: string } }[] },
    };
  };

  beforeAll(async () => {
    t = await startTestApp("pglite", { listen: true });
    key = await t.createPrincipal("owner");
    workspaceId = (await createWorkspace(t.as(key))).id;
    await admit(t.as(key), { question: "something to list", workspaceId });
  });
  afterAll(() => t?.close());

  it("a NUL inside a global id names nothing in a read and is a ValidationError with a message in a mutation", async () => {
    const nulRun = b64("Run:abc\u0000def");
    const read = await post({ query: "query($id: ID!) { run(id: $id) { id } node(id: $id) { id } }", variables: { id: nulRun } });
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data).toEqual({ run: null, node: null });
    const cancel = await post({
      query: "mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename ... on ValidationError { message } ... on Error { message } } }",
      variables: { id: nulRun },
    });
    expect(cancel.body.errors).toBeUndefined();
    const payload = cancel.body.data!.cancelRun as { __typename: string; message: string };
    expect(payload.__typename).toBe("ValidationError");
    expect(payload.message).toMatch(/runId/);
    const badUtf8 = Buffer.from([0x52, 0x75, 0x6e, 0x3a, 0xff, 0xfe]).toString("base64");
    const utf8 = await post({ query: "query($id: ID!) { run(id: $id) { id } }", variables: { id: badUtf8 } });
    expect(utf8.body).toEqual({ data: { run: null } });
  });

  it("a ValidationError's message alone says which field is wrong and why", async () => {
    // What "Try it" shows when a pasted id is not one: the example selects `... on Error { message }` only.
    const admitted = await post({
      query: `mutation { admitRun(input: { conversationId: "not-an-id", question: "And in 2028?", multitask: ENQUEUE }) { __typename ... on Error { message } } }`,
    });
    expect(admitted.body.errors).toBeUndefined();
    const payload = admitted.body.data!.admitRun as { __typename: string; message: string };
    expect(payload.__typename).toBe("ValidationError");
    expect(payload.message).toMatch(/^Invalid input: conversationId: \S.+/);
    const created = await post({ query: `mutation { createWorkspace(input: { title: "", goal: "g" }) { __typename ... on Error { message } } }` });
    expect(created.body.data!.createWorkspace).toEqual({ __typename: "ValidationError", message: expect.stringMatching(/^Invalid input: title: \S/) });
  });

  it("a NUL inside a cursor is a user error naming the argument", async () => {
    const lists = [
      { query: "query($after: String) { conversations(first: 5, after: $after) { edges { node { id } } } }", cursor: b64("GPC:S:a\u0000b") },
      {
        query: `query($after: String) { workspace(id: "${workspaceId}") { historyCatalog(first: 5, after: $after) { edges { node { publicationId } } } } }`,
        cursor: b64url("catalog:1700000000000:a\u0000b"),
      },
    ];
    for (const { query, cursor } of lists) {
      const answer = await post({ query, variables: { after: cursor } });
      expect(answer.body.errors?.[0]?.message, JSON.stringify(answer.body)).not.toBe("Unexpected error.");
      expect(answer.body.errors?.[0]?.extensions?.code, JSON.stringify(answer.body)).toBe("BAD_USER_INPUT");
      expect(answer.body.errors?.[0]?.message).toMatch(/^after /);
    }
  });

  it.each(["application/json", "application/graphql-response+json"])("a POST sent as %s is executed", async (contentType) => {
    const answer = await post({ query: "{ viewer { name } }" }, contentType);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { viewer: { name: "owner" } } });
  });
});
