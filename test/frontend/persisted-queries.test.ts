// Automatic persisted queries as Apollo's PersistedQueryLink speaks them: a hash alone is answered
// PersistedQueryNotFound, the text sent with its hash is executed and kept, and the hash alone then
// runs it. With TRUSTED_DOCUMENTS_ONLY nothing but a trusted text is kept, and an SDK operation's
// text as Apollo prints it (with __typename added) counts as that operation.
import { createHash } from "node:crypto";
import { parse, print, visit } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ViewerDocument } from "../../sdk/generated/graphql.js";
import { loadConfig } from "../../src/config.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

type Answer = { data?: Record<string, unknown>; errors?: { message: string; extensions?: { code?: string } }[] };

async function post(url: string, body: unknown): Promise<Answer> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
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
});
