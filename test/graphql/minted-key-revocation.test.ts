// Attack: a leaked key mints keys of its own (createApiKey through it), so that revoking it leaves
// the attacker a key that still works. Every key records the key that made it (createdBy), and
// revoking a key withKeysItMinted revokes the keys it made, and theirs, at once: their requests and the access
// tokens they minted are refused; the key that made the revoked one keeps working. A key minting
// while it is being revoked either mints first, and its new key is revoked with it, or is refused.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idOfType } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const KEY = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) {
  __typename ... on CreateApiKeySuccess { secret apiKey { id } } ... on Error { message } } }`;
const REVOKE = `mutation($id: ID!) { revokeApiKey(input: { id: $id, withKeysItMinted: true }) { __typename ... on RevokeApiKeySuccess { apiKey { revokedAt } } } }`;
const ROTATE = `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`;
const MINT = `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { ... on CreateAccessTokenSuccess { token } } }`;
const WORKSPACE = `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`;

describe.each(backends)("revoking a key that made keys, on %s", (backend) => {
  let t: TestApp | undefined;
  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: true });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });
  const gql = (bearer: string, query: string, variables: Record<string, unknown> = {}) => rawRequest(t!.app, bearer, query, variables);
  const makeKey = async (by: string, name: string) => {
    const made = (await gql(by, KEY, { input: { name, forAgent: true } })).data!.createApiKey;
    expect(made.__typename, made.message).toBe("CreateApiKeySuccess");
    return { secret: made.secret as string, id: made.apiKey.id as string, internal: idOfType(made.apiKey.id as string, "ApiKey")! };
  };
  const viewer = async (bearer: string) => {
    const answer = await gql(bearer, "{ viewer { name } }");
    return answer.data?.viewer?.name ?? answer.errors?.[0]?.message;
  };

  it("revokes the revoked key's children and grandchildren with it, their tokens too, and leaves the key that made it", async () => {
    const owner = await t!.createPrincipal("Owner");
    const workspace = (await gql(owner, WORKSPACE)).data!.createWorkspace.workspace.id as string;
    const middle = await makeKey(owner, "agent");
    const child = await makeKey(middle.secret, "agent's own");
    const grandchild = await makeKey(child.secret, "agent's own's own");
    const token = (await gql(child.secret, MINT, { input: { grants: [{ resourceId: workspace, operations: ["READ"] }] } })).data!.createAccessToken
      .token as string;
    expect((await gql(token, `query($w: ID!) { workspace(id: $w) { title } }`, { w: workspace })).data!.workspace.title).toBe("W");

    const chain = await gql(
      owner,
      `query($id: ID!) { node(id: $id) { ... on ApiKey { name createdBy { name createdBy { name createdBy { name createdBy { name } } } } } } }`,
      {
        id: grandchild.id,
      },
    );
    expect(chain.data!.node).toEqual({
      name: "agent's own's own",
      createdBy: { name: "agent's own", createdBy: { name: "agent", createdBy: { name: "first key", createdBy: null } } },
    });

    const revoked = (await gql(owner, REVOKE, { id: middle.id })).data!.revokeApiKey;
    expect(revoked.__typename).toBe("RevokeApiKeySuccess");
    expect(await viewer(middle.secret)).toBe("Invalid API key.");
    expect(await viewer(child.secret)).toBe("Invalid API key.");
    expect(await viewer(grandchild.secret)).toBe("Invalid API key.");
    const read = await gql(token, `query($w: ID!) { workspace(id: $w) { title } }`, { w: workspace });
    expect(read.errors?.[0]?.message).toBe("The API key that issued this access token was revoked.");
    expect(await viewer(owner)).toBe("Owner");

    // Each shows the same revocation time.
    const times = await t!.app.db.prisma.apiKey.findMany({
      where: { id: { in: [middle.internal, child.internal, grandchild.internal] } },
      select: { revokedAt: true },
    });
    expect(times).toHaveLength(3);
    expect(new Set(times.map((key) => key.revokedAt?.toISOString())).size).toBe(1);
    expect(times[0]!.revokedAt?.toISOString()).toBe(revoked.apiKey.revokedAt);
  });

  it("revokes only the key named without withKeysItMinted: a key rotated the usual way leaves its replacement working", async () => {
    const owner = await t!.createPrincipal("Rotating");
    const replacement = await makeKey(owner, "replacement");
    const first = (await gql(owner, "{ apiKeys(first: 5) { edges { node { id name } } } }")).data!.apiKeys.edges.find(
      (edge: { node: { name: string } }) => edge.node.name === "first key",
    ).node.id as string;
    expect((await gql(owner, ROTATE, { id: first })).data!.revokeApiKey.__typename).toBe("RevokeApiKeySuccess");
    expect(await viewer(owner)).toBe("Invalid API key.");
    expect(await viewer(replacement.secret)).toBe("Rotating");

    // A key revoked the plain way, then found to have minted keys: revoked again withKeysItMinted, they go too.
    const otherOwner = await t!.createPrincipal("Rotating again");
    const minted = await makeKey(otherOwner, "made with the leaked key");
    const second = await makeKey(minted.secret, "made by that key");
    expect((await gql(minted.secret, ROTATE, { id: minted.id })).data!.revokeApiKey.__typename).toBe("RevokeApiKeySuccess");
    expect(await viewer(second.secret)).toBe("Rotating again");
    expect((await gql(otherOwner, REVOKE, { id: minted.id })).data!.revokeApiKey.__typename).toBe("RevokeApiKeySuccess");
    expect(await viewer(second.secret)).toBe("Invalid API key.");
    expect(await viewer(otherOwner)).toBe("Rotating again");
  });

  it("leaves no live key made by a key while it was being revoked", async () => {
    const owner = await t!.createPrincipal("Racer");
    for (let round = 0; round < 3; round++) {
      const leaked = await makeKey(owner, `leaked ${round}`);
      const mints = Array.from({ length: 8 }, (_, i) => gql(leaked.secret, KEY, { input: { name: `spawn ${i}`, forAgent: true } }));
      const revocation = gql(owner, REVOKE, { id: leaked.id });
      const answers = await Promise.all([...mints, revocation]);
      expect(answers.at(-1)!.data!.revokeApiKey.__typename).toBe("RevokeApiKeySuccess");
      const made = answers.slice(0, -1).flatMap((answer) => (answer.data?.createApiKey?.secret ? [answer.data.createApiKey.secret as string] : []));
      for (const secret of made) expect(await viewer(secret)).toBe("Invalid API key.");
      expect(await t!.app.db.prisma.apiKey.count({ where: { createdByKeyId: leaked.internal, revokedAt: null } })).toBe(0);
    }
  });
});
