// MAX_API_KEYS_PER_PRINCIPAL: a principal with that many live API keys is refused one more with an
// ApiKeyLimitError naming the bound, and no key is written; revoked keys do not count, so revoking
// one frees a place; another principal is not affected. Creates side by side at the bound create
// exactly as many keys as fit, whichever of the principal's keys sends them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { CreateApiKeyDocument, RevokeApiKeyDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const LIMIT = 4;

describe.each(backends)("the API key limit on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { maxApiKeysPerPrincipal: LIMIT });
  });
  afterAll(async () => {
    await t?.close();
  });

  const create = async (client: DossierClient, name = "more") => (await client.request(CreateApiKeyDocument, { input: { name } })).createApiKey;
  const liveKeys = async (principalName: string) => t.app.db.prisma.apiKey.count({ where: { principal: { name: principalName }, revokedAt: null } });

  it("refuses a key past the bound with an ApiKeyLimitError, even through a key it minted; revoking one frees a place", async () => {
    const name = `minter-${backend}`;
    let client = t.as(await t.createPrincipal(name));
    const created = [];
    // Each new key mints the next: every one of them counts towards the same principal's bound.
    for (let i = 1; i < LIMIT; i++) {
      const success = expectType(await create(client), "CreateApiKeySuccess");
      created.push(success.apiKey);
      client = t.as(success.secret);
    }
    const refused = expectType(await create(client), "ApiKeyLimitError");
    expect(refused.maxApiKeys).toBe(LIMIT);
    expect(refused.message).toMatch(/already have 4 API keys/);
    expect(await liveKeys(name)).toBe(LIMIT);
    expect(await t.app.db.prisma.apiKey.count({ where: { principal: { name } } })).toBe(LIMIT);

    // Another principal is not affected.
    expectType(await create(t.as(await t.createPrincipal(`other-${backend}`))), "CreateApiKeySuccess");

    expectType((await client.request(RevokeApiKeyDocument, { input: { id: created[0]!.id } })).revokeApiKey, "RevokeApiKeySuccess");
    expectType(await create(client), "CreateApiKeySuccess");
    expectType(await create(client), "ApiKeyLimitError");
    expect(await liveKeys(name)).toBe(LIMIT);
  });

  it("creates side by side at the bound create exactly as many keys as fit", async () => {
    const name = `burst-${backend}`;
    const client = t.as(await t.createPrincipal(name));
    const payloads = await Promise.all(Array.from({ length: 12 }, (_, i) => create(client, `key ${i}`)));
    const kinds = payloads.map((p) => p.__typename);
    expect(kinds.filter((k) => k === "CreateApiKeySuccess")).toHaveLength(LIMIT - 1);
    expect(kinds.filter((k) => k === "ApiKeyLimitError")).toHaveLength(12 - (LIMIT - 1));
    expect(await liveKeys(name)).toBe(LIMIT);
  });
});
