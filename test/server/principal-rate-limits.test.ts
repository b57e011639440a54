// Rate limits bound a principal, not only each of its credentials: every request with an API key,
// an access token or a sign-in token also takes a token from its principal's bucket
// (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE), so minting more keys (at most MAX_API_KEYS_PER_PRINCIPAL)
// or tokens adds no requests. Another principal keeps its own.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, describe, expect, inject, it } from "vitest";
import { WebSocket } from "ws";
import { openDatabase } from "../../src/db/open-database.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { PrincipalService } from "../../src/domain/principal/principal-service.js";
import { createEventBus } from "../../src/events/topics.js";
import { InProcessTokenBuckets } from "../../src/server/rate-limit.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

type Answer = { status: number; body: { data?: any; errors?: { message: string; extensions?: Record<string, unknown> }[] } };

async function post(url: string, query: string, key?: string, variables?: object): Promise<Answer> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key && { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: await response.json() };
}

const READ = "{ workspaces(first: 1) { edges { node { id } } } }";
const MINT_KEY =
  'mutation { createApiKey(input: { name: "one more" }) { __typename ... on CreateApiKeySuccess { secret } ... on ApiKeyLimitError { maxApiKeys } } }';

/** Mints keys over HTTP, each with the key the one before minted, until one is refused: the mints' answers and the keys. */
async function chainMint(urls: string[], first: string, attempts: number): Promise<{ kinds: string[]; keys: string[] }> {
  const keys = [first];
  const kinds: string[] = [];
  for (let i = 0; i < attempts; i += 1) {
    const answer = await post(urls[i % urls.length]!, MINT_KEY, keys.at(-1));
    kinds.push(answer.status === 200 ? answer.body.data.createApiKey.__typename : String(answer.status));
    if (answer.body.data?.createApiKey.secret) keys.push(answer.body.data.createApiKey.secret);
  }
  return { kinds, keys };
}

let t: TestApp | undefined;
const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await t?.close();
  t = undefined;
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("a principal's rate limit, in one process", () => {
  it("keys past the cap are refused; reads through many keys and access tokens of one principal draw from one bucket; another principal is not held back", async () => {
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      maxApiKeysPerPrincipal: 4,
      // Two requests per credential at once; eight per principal, refilled once a minute.
      rateLimits: new InProcessTokenBuckets({ perMinute: 6, burst: 2 }),
      principalRateLimits: new InProcessTokenBuckets({ perMinute: 1, burst: 8 }),
    });
    const url = t.server!.url;
    const bob = await t.createPrincipal("bob");
    // Each new key mints the next (each with a full bucket of its own): the fourth is one too many.
    const { kinds, keys } = await chainMint([url], bob, 4);
    expect(kinds).toEqual(["CreateApiKeySuccess", "CreateApiKeySuccess", "CreateApiKeySuccess", "ApiKeyLimitError"]);
    expect(keys).toHaveLength(4);
    // Access tokens, minted without a request: their buckets are their own, their principal Bob's.
    const actor = (await t.app.services.principals.authenticate(bob))!;
    const workspace = await t.app.services.workspaces.createWorkspace(actor, { title: "Cells", goal: "shared" });
    const mint = async () =>
      (await t!.app.services.accessTokens.mint(actor, { grants: [{ resourceId: encodeGlobalId("Workspace", workspace.id), operations: ["READ"] }] })).token;
    const tokens = [await mint(), await mint(), await mint(), await mint()];

    // Two rounds through eight credentials: the four mints spent half of Bob's eight.
    const statuses: number[] = [];
    const refusals: Answer[] = [];
    for (let round = 0; round < 2; round += 1) {
      for (const credential of [...keys, ...tokens]) {
        const answer = await post(url, READ, credential);
        statuses.push(answer.status);
        if (answer.status === 429) refusals.push(answer);
      }
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(4);
    expect(statuses.filter((status) => status === 429)).toHaveLength(12);
    for (const refused of refusals) expect(refused.body.errors![0]!.extensions).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: expect.any(Number) });

    // A graphql-ws operation through a fresh token of Bob's is refused too.
    const socket = createWsClient({
      url: t.server!.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { authorization: `Bearer ${await mint()}` },
    });
    try {
      const refused = await withTimeout(
        socket
          .iterate({ query: "{ __typename }" })
          .next()
          .then(
            () => undefined,
            (errors: unknown) => errors as { extensions?: Record<string, unknown> }[],
          ),
        10_000,
      );
      expect(refused?.[0]?.extensions).toMatchObject({ code: "RATE_LIMITED" });
    } finally {
      await socket.dispose();
    }

    // Alice has her own bucket, and may mint keys of her own.
    const alice = await t.createPrincipal("alice");
    expect([(await post(url, READ, alice)).status, (await post(url, MINT_KEY, alice)).body.data.createApiKey.__typename]).toEqual([200, "CreateApiKeySuccess"]);
  });
});

const redisUrl = inject("redisUrl");

describe.runIf(backends.includes("postgres") && redisUrl)("a principal's rate limit shared by two instances through Redis", () => {
  it("its keys, minted up to the cap and used on both instances, draw from one bucket of the principal's", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-principal-rate-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // Four requests per key at once; a principal's bucket holds as many seconds' worth: eight, a token every five seconds.
    const env = {
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl!,
      RATE_LIMIT_PER_MINUTE: "6",
      RATE_LIMIT_BURST: "4",
      RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE: "12",
      MAX_API_KEYS_PER_PRINCIPAL: "4",
      IN_PROCESS_WORKER: "false",
      PORT: "0",
    };
    const urls: string[] = [];
    for (const name of ["one", "two"]) {
      const server = spawnBuilt("src/main.ts", { env: { ...env, DATA_DIR: path.join(dir, name) } });
      running.push(server);
      urls.push((JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url);
    }
    const db = await openDatabase({ kind: "postgres", url: database.url });
    cleanups.push(() => db.close());
    const principals = new PrincipalService({ prisma: db.prisma, events: createEventBus() });
    const [bob, alice] = [(await principals.createPrincipal({ name: "bob" })).secret, (await principals.createPrincipal({ name: "alice" })).secret];

    const { kinds, keys } = await chainMint(urls, bob, 4);
    expect(kinds).toEqual(["CreateApiKeySuccess", "CreateApiKeySuccess", "CreateApiKeySuccess", "ApiKeyLimitError"]);
    expect(await db.prisma.apiKey.count({ where: { principal: { name: "bob" } } })).toBe(4);

    // Three reads through each key (a mint and three: each key's own burst), on both instances in turn.
    const answers: { status: number; instance: number }[] = [];
    for (let round = 0; round < 3; round += 1) {
      for (const [i, key] of keys.entries()) answers.push({ status: (await post(urls[(round + i) % 2]!, READ, key)).status, instance: (round + i) % 2 });
    }
    const accepted = answers.filter((a) => a.status === 200).length;
    expect(answers.filter((a) => a.status === 429)).toHaveLength(12 - accepted);
    // The eight tokens less the four mints', plus at most one refilled meanwhile.
    expect(accepted).toBeGreaterThanOrEqual(4);
    expect(accepted).toBeLessThanOrEqual(5);
    // Refused by both instances: they drew from one bucket.
    expect(new Set(answers.filter((a) => a.status === 429).map((a) => a.instance))).toEqual(new Set([0, 1]));
    expect((await post(urls[0]!, READ, alice)).status).toBe(200);
    expect((await post(urls[1]!, READ, alice)).status).toBe(200);
  }, 120_000);
});
