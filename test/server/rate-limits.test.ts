// Request rate limits (issue 36): a token bucket per API key and per client address for requests
// without one. Over the limit: RATE_LIMITED with extensions.retryAfterSeconds, HTTP 429 with
// Retry-After, and nothing executed; a graphql-ws operation takes its token when it starts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, describe, expect, inject, it } from "vitest";
import { WebSocket } from "ws";
import { openDatabase } from "../../src/db/open-database.js";
import { PrincipalService } from "../../src/domain/principal/principal-service.js";
import { createEventBus } from "../../src/events/topics.js";
import { InProcessTokenBuckets } from "../../src/server/rate-limit.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, withTimeout } from "../support/wait.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type Answer = { status: number; retryAfter: string | null; body: { data?: any; errors?: { message: string; extensions?: Record<string, unknown> }[] } };

async function post(url: string, query: string, key?: string, variables?: object): Promise<Answer> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key && { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() };
}

const CREATE = 'mutation ($goal: String!) { createWorkspace(input: { title: "Cells", goal: $goal }) { __typename } }';

describe("token buckets in one process", () => {
  it("hold a burst, refill at the rate per minute, and say how long until the next token", async () => {
    let now = 0;
    const buckets = new InProcessTokenBuckets({ perMinute: 60, burst: 2 }, () => now);
    expect([await buckets.take("k"), await buckets.take("k")]).toEqual([{ allowed: true }, { allowed: true }]);
    expect(await buckets.take("k")).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(await buckets.take("other")).toEqual({ allowed: true });
    now = 1_000;
    expect(await buckets.take("k")).toEqual({ allowed: true });
    expect(await buckets.take("k")).toEqual({ allowed: false, retryAfterSeconds: 1 });
  });
});

describe("rate limits on the API", () => {
  it("refuses a key over its burst with 429, Retry-After and RATE_LIMITED, executing nothing; other keys and addresses have their own buckets", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true, rateLimits: new InProcessTokenBuckets({ perMinute: 6, burst: 3 }) });
    const url = t.server!.url;
    const [busy, quiet] = [await t.createPrincipal("busy"), await t.createPrincipal("quiet")];
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i += 1) answers.push(await post(url, CREATE, busy, { goal: `goal ${i}` }));
    for (const accepted of answers.slice(0, 3)) expect(accepted.body.data.createWorkspace.__typename).toBe("CreateWorkspaceSuccess");

    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429, 429]);
    for (const refused of answers.slice(3)) {
      expect(refused.body.data).toBeUndefined();
      expect(refused.body.errors![0]!.extensions).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: expect.any(Number) });
      const seconds = refused.body.errors![0]!.extensions!.retryAfterSeconds as number;
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(10);
      expect(refused.retryAfter).toBe(String(seconds));
    }
    // Nothing executed for the refused requests: three workspaces, not six.
    const workspaces = await post(url, "{ workspaces(first: 20) { edges { node { id } } } }", quiet);
    expect(workspaces.status).toBe(200);
    const mine = await t.app.db.prisma.workspace.count({ where: { owner: { name: "busy" } } });
    expect(mine).toBe(3);

    // Requests without a credential draw from their address's bucket, apart from the keys'.
    const keyless = [];
    for (let i = 0; i < 4; i += 1) keyless.push((await post(url, "{ __typename }")).status);
    expect(keyless).toEqual([401, 401, 401, 429]);
  });

  it("an access token has its own bucket: an end user's browser past its burst leaves the team's key its requests", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true, rateLimits: new InProcessTokenBuckets({ perMinute: 6, burst: 5 }) });
    const url = t.server!.url;
    const key = await t.createPrincipal("team");
    const created = await post(
      url,
      'mutation { createWorkspace(input: { title: "Cells", goal: "shared" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }',
      key,
    );
    const workspaceId = created.body.data.createWorkspace.workspace.id as string;
    const mint = async () =>
      (
        await post(url, "mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { ... on CreateAccessTokenSuccess { token } } }", key, {
          input: { grants: [{ resourceId: workspaceId, operations: ["READ"] }] },
        })
      ).body.data.createAccessToken.token as string;
    const [browser, another] = [await mint(), await mint()];
    const read = "{ workspaces(first: 1) { edges { node { id } } } }";
    const byBrowser: number[] = [];
    for (let i = 0; i < 7; i += 1) byBrowser.push((await post(url, read, browser)).status);
    expect(byBrowser).toEqual([200, 200, 200, 200, 200, 429, 429]);
    // The key spent one token creating the workspace and two minting: its bucket is its own.
    expect((await post(url, read, key)).status).toBe(200);
    expect((await post(url, read, another)).status).toBe(200);
  });

  it("a graphql-ws subscription takes its token when it starts; refused, the connection stays open", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true, rateLimits: new InProcessTokenBuckets({ perMinute: 6, burst: 2 }) });
    const key = await t.createPrincipal("watcher");
    const socket = createWsClient({ url: t.server!.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { authorization: `Bearer ${key}` } });
    let closed = false;
    socket.on("closed", () => (closed = true));
    try {
      const admitted = await post(t.server!.url, 'mutation { admitRun(input: { question: "Hello?" }) { ... on AdmitRunSuccess { run { id } } } }', key);
      const runId = admitted.body.data.admitRun.run.id as string;
      // A subscription: one token at its start, however many updates follow.
      const updates = socket.iterate({ query: `subscription { runEvents(runId: "${runId}") { status } }` });
      const firstUpdate = updates.next();
      await waitFor(() => t!.listeners() > 0, 10_000);
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
      expect(refused?.[0]?.extensions).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: expect.any(Number) });
      expect(closed).toBe(false);
      await updates.return?.();
      await firstUpdate.catch(() => undefined);
    } finally {
      await socket.dispose();
    }
  });
});

const redisUrl = inject("redisUrl");
const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.runIf(backends.includes("postgres") && redisUrl)("rate limits shared by two instances through Redis", () => {
  it("twice the burst sent to two servers alternately: the excess is refused with Retry-After, and nothing executes for it", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-rate-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // Six a minute: a token every ten seconds, so the test's own duration refills next to nothing.
    const env = { DATABASE_URL: database.url, REDIS_URL: redisUrl!, RATE_LIMIT_PER_MINUTE: "6", RATE_LIMIT_BURST: "8", IN_PROCESS_WORKER: "false", PORT: "0" };
    const urls: string[] = [];
    for (const name of ["one", "two"]) {
      const server = spawnBuilt("src/main.ts", { env: { ...env, DATA_DIR: path.join(dir, name) } });
      running.push(server);
      urls.push((JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url);
    }
    const db = await openDatabase({ kind: "postgres", url: database.url });
    cleanups.push(() => db.close());
    const { secret } = await new PrincipalService({ prisma: db.prisma, events: createEventBus() }).createPrincipal({ name: "eager" });

    const answers: Answer[] = [];
    for (let i = 0; i < 16; i += 1) answers.push(await post(urls[i % 2]!, CREATE, secret, { goal: `goal ${i}` }));
    const accepted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(accepted.length + refused.length).toBe(16);
    // The burst, plus at most one token refilled while the requests were sent.
    expect(accepted.length).toBeGreaterThanOrEqual(8);
    expect(accepted.length).toBeLessThanOrEqual(9);
    // Refused by both instances: they drew from one bucket.
    expect(new Set(answers.flatMap((a, i) => (a.status === 429 ? [i % 2] : [])))).toEqual(new Set([0, 1]));
    for (const answer of refused) {
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(answer.body.errors![0]!.extensions).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: Number(answer.retryAfter) });
    }
    expect(await db.prisma.workspace.count()).toBe(accepted.length);
  }, 120_000);
});
