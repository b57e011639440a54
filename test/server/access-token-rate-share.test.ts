// A principal's access tokens together draw at most half of its requests (rate-limit.ts): however
// many end users' browsers a team mints tokens for, and however hard they all ask, the team's API
// key keeps the other half of the principal's bucket. In this process's buckets and in Redis's.
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, inject, it } from "vitest";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { InProcessTokenBuckets, type RateLimitSettings, type TokenBuckets } from "../../src/server/rate-limit.js";
import { RedisTokenBuckets } from "../../src/server/redis-token-buckets.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Answer = { status: number; body: { errors?: { extensions?: Record<string, unknown> }[] } };

async function read(url: string, credential: string): Promise<Answer> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${credential}` },
    body: JSON.stringify({ query: "{ workspaces(first: 1) { edges { node { id } } } }" }),
  });
  return { status: response.status, body: await response.json() };
}

let t: TestApp | undefined;
const closing: TokenBuckets[] = [];
afterEach(async () => {
  await t?.close();
  t = undefined;
  for (const buckets of closing.splice(0)) await buckets.close?.();
});

const redisUrl = inject("redisUrl");
type Store = (settings: RateLimitSettings) => Promise<TokenBuckets>;
const stores: [string, Store | undefined][] = [
  ["in this process", async (settings) => new InProcessTokenBuckets(settings)],
  ["in Redis", redisUrl ? (settings) => RedisTokenBuckets.connect(redisUrl, settings, { prefix: `dossier:test-${randomUUID()}:` }) : undefined],
];

describe.each(stores)("a principal's access tokens' share of its requests, %s", (_, store) => {
  it.runIf(store)(
    "six end users' tokens asking twice each get half of the principal's burst; its API key gets the other half",
    async () => {
      // Ten requests per credential at once (none holds back a token here); eight per principal, refilled once a minute.
      const [requests, principals] = [await store!({ perMinute: 60, burst: 10 }), await store!({ perMinute: 1, burst: 8 })];
      closing.push(requests, principals);
      t = await startTestApp("pglite", { listen: true, authRequired: true, rateLimits: requests, principalRateLimits: principals });
      const url = t.server!.url;
      const bob = await t.createPrincipal("bob");
      const actor = (await t.app.services.principals.authenticate(bob))!;
      const workspace = await t.app.services.workspaces.createWorkspace(actor, { title: "Cells", goal: "shared" });
      const grants = [{ resourceId: encodeGlobalId("Workspace", workspace.id), operations: ["READ" as const] }];
      const tokens: string[] = [];
      for (let i = 0; i < 6; i += 1) tokens.push((await t.app.services.accessTokens.mint(actor, { grants })).token);

      const tokenStatuses: number[] = [];
      const refusals: Answer[] = [];
      for (let round = 0; round < 2; round += 1) {
        for (const token of tokens) {
          const answer = await read(url, token);
          tokenStatuses.push(answer.status);
          if (answer.status === 429) refusals.push(answer);
        }
      }
      // The tokens' bucket holds four: the first four reads, then none.
      expect(tokenStatuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429, 429, 429]);
      for (const refused of refusals)
        expect(refused.body.errors![0]!.extensions).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: expect.any(Number) });

      // Bob's backend still has the four the tokens could not take, and no more.
      const keyStatuses: number[] = [];
      for (let i = 0; i < 5; i += 1) keyStatuses.push((await read(url, bob)).status);
      expect(keyStatuses).toEqual([200, 200, 200, 200, 429]);
      // Another principal's tokens have a share of their own.
      const alice = await t.createPrincipal("alice");
      const aliceActor = (await t.app.services.principals.authenticate(alice))!;
      const hers = await t.app.services.workspaces.createWorkspace(aliceActor, { title: "Hers", goal: "hers" });
      const aliceToken = (
        await t.app.services.accessTokens.mint(aliceActor, { grants: [{ resourceId: encodeGlobalId("Workspace", hers.id), operations: ["READ"] }] })
      ).token;
      expect((await read(url, aliceToken)).status).toBe(200);
    },
    120_000,
  );

  it.runIf(store)(
    "tokens one key mints for one endUser share its bucket; other end users, even with the same grants, another key's end user of that name, and tokens minted without one keep theirs",
    async () => {
      // Two requests per end user at once; the principal's bucket is no limit here.
      const [requests, principals] = [await store!({ perMinute: 1, burst: 2 }), await store!({ perMinute: 1, burst: 100 })];
      closing.push(requests, principals);
      t = await startTestApp("pglite", { listen: true, authRequired: true, rateLimits: requests, principalRateLimits: principals });
      const bob = await t.createPrincipal("bob");
      const actor = (await t.app.services.principals.authenticate(bob))!;
      const otherKey = (await t.app.services.principals.createApiKey(actor, { name: "second backend" })).secret;
      const otherActor = (await t.app.services.principals.authenticate(otherKey))!;
      const shared = await t.app.services.workspaces.createWorkspace(actor, { title: "Shared", goal: "one workspace every viewer reads" });
      const grants = [{ resourceId: encodeGlobalId("Workspace", shared.id), operations: ["READ" as const] }];
      const mint = async (endUser?: string, by = actor) => (await t!.app.services.accessTokens.mint(by, { grants, ...(endUser ? { endUser } : {}) })).token;
      const statuses = async (token: string, n: number) => {
        const seen: number[] = [];
        for (let i = 0; i < n; i += 1) seen.push((await read(t!.server!.url, token)).status);
        return seen;
      };
      expect(await statuses(await mint("mallory"), 3)).toEqual([200, 200, 429]);
      // Mallory's page reloaded, or a token minted again on purpose: the same empty bucket.
      expect(await statuses(await mint("mallory"), 1)).toEqual([429]);
      // Another key (an agent's) naming "mallory" draws on a share of its own, never on the backend's Mallory's.
      expect(await statuses(await mint("mallory", otherActor), 3)).toEqual([200, 200, 429]);
      // Alice reads the same workspace with the same grants: her own bucket.
      expect(await statuses(await mint("alice"), 3)).toEqual([200, 200, 429]);
      // A name with a control character (which a database column could not keep) is refused at minting.
      await expect(mint("mallory\u0000")).rejects.toMatchObject({ issues: [{ field: "endUser", message: "must hold no control characters" }] });
      // A token minted without an endUser is an end user of its own.
      expect(await statuses(await mint(), 3)).toEqual([200, 200, 429]);
      expect(await statuses(await mint(), 1)).toEqual([200]);
    },
  );
});
