// Failed authentications per client address (AUTH_FAILURES_PER_MINUTE): a flood of wrong API keys
// costs a key lookup each only up to the address's burst; past it, HTTP requests get 429
// RATE_LIMITED with Retry-After and graphql-ws connections are closed with 4429, before anything
// is looked up. A good key sent from another address is served as usual.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { setTimeout } from "node:timers/promises";
import path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { WebSocket } from "ws";
import { loadConfig } from "../../src/config.js";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { ACCESS_TOKEN_TYPE } from "../../src/domain/principal/access-tokens.js";
import { InProcessTokenBuckets, type TokenBuckets } from "../../src/server/rate-limit.js";
import { RedisTokenBuckets } from "../../src/server/redis-token-buckets.js";
import { openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const apps: TestApp[] = [];
const closing: TokenBuckets[] = [];
const running: Spawned[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const buckets of closing.splice(0)) await buckets.close?.();
  await killAll(running);
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** An app whose statements are heard: `lookups()` counts those on API keys since the last `forget()`. */
async function startHeard(authFailures: TokenBuckets, now?: () => Date): Promise<{ t: TestApp; lookups(): number; forget(): void }> {
  const statements: string[] = [];
  const t = await startTestApp("pglite", {
    listen: true,
    authRequired: true,
    authFailures,
    now,
    database: () => openMigratedTestDatabase("pglite", { onQuery: (sql) => statements.push(sql) }),
  });
  apps.push(t);
  return { t, lookups: () => statements.filter((sql) => sql.includes('"api_key"')).length, forget: () => void statements.splice(0) };
}

type Answer = { status: number; retryAfter: string | undefined; body: { data?: any; errors?: { message: string; extensions?: Record<string, unknown> }[] } };

/** A GraphQL POST sent from `localAddress` (another loopback address is another client). */
function post(url: string, key: string, localAddress = "127.0.0.1"): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method: "POST", localAddress, headers: { "content-type": "application/json", authorization: `Bearer ${key}` } }, (response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      response.on("end", () => resolve({ status: response.statusCode!, retryAfter: response.headers["retry-after"], body: JSON.parse(text) }));
    });
    sent.on("error", reject);
    sent.end(JSON.stringify({ query: "{ __typename }" }));
  });
}

/** Opens a graphql-ws connection from `localAddress` with `key`: acknowledged, or how it was closed. */
function connectSocket(wsUrl: string, key: string, localAddress = "127.0.0.1"): Promise<"acknowledged" | { code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl, "graphql-transport-ws", { localAddress });
    socket.on("error", reject);
    socket.on("open", () => socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${key}` } })));
    socket.on("message", (data: Buffer) => {
      if ((JSON.parse(data.toString("utf8")) as { type: string }).type !== "connection_ack") return;
      socket.close();
      resolve("acknowledged");
    });
    socket.on("close", (code: number, reason: Buffer) => resolve({ code, reason: reason.toString("utf8") }));
  });
}

const WRONG = "dsk_wrong_key_that_matches_nothing";

describe("failed authentications per client address", () => {
  it("over HTTP: past the burst a wrong key is refused with 429 and Retry-After without a lookup; a good key from another address is served", async () => {
    const { t, lookups, forget } = await startHeard(new InProcessTokenBuckets({ perMinute: 6, burst: 3 }));
    const url = t.server!.url;
    const good = await t.createPrincipal("good");
    forget();

    const first = [];
    for (let i = 0; i < 3; i += 1) first.push(await post(url, WRONG));
    expect(first.map((a) => a.status)).toEqual([401, 401, 401]);
    expect(lookups()).toBe(3);

    const flood = [];
    for (let i = 0; i < 20; i += 1) flood.push(await post(url, `${WRONG}${i}`));
    expect(flood.map((a) => a.status)).toEqual(Array(20).fill(429));
    for (const refused of flood) {
      expect(refused.body.data).toBeUndefined();
      expect(refused.body.errors![0]!.message).toMatch(/^Too many failed authentications from this address: try again in \d+ s\.$/);
      const extensions = refused.body.errors![0]!.extensions!;
      expect(extensions).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: expect.any(Number) });
      expect(refused.retryAfter).toBe(String(extensions.retryAfterSeconds));
      expect(extensions.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(extensions.retryAfterSeconds).toBeLessThanOrEqual(10);
    }
    // Not one key was looked up for the twenty refused requests.
    expect(lookups()).toBe(3);

    // Another client's good key is looked up and served; so is a wrong one of its (its own burst).
    const other = await post(url, good, "127.0.0.2");
    expect(other.status).toBe(200);
    expect(other.body.data).toEqual({ __typename: "Query" });
    expect((await post(url, WRONG, "127.0.0.2")).status).toBe(401);
    // The flooding address waits, good key or not: nothing tells them apart without the lookup.
    expect((await post(url, good)).status).toBe(429);
  });

  it("an end user's expired access token is not counted: many sent from one address, the address's keys are still served", async () => {
    let clock = new Date();
    const { t, lookups, forget } = await startHeard(new InProcessTokenBuckets({ perMinute: 6, burst: 3 }), () => clock);
    const good = await t.createPrincipal("good");
    const workspace = await createWorkspace(t.as(good), "An end user's workspace");
    const minted = await t
      .as(good)
      .request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["READ"] }], expiresInSeconds: 60 } });
    const token = expectType(minted.createAccessToken, "CreateAccessTokenSuccess").token;
    expect((await post(t.server!.url, token)).status).toBe(200);
    clock = new Date(clock.getTime() + 120_000);
    forget();
    const refused = [];
    for (let i = 0; i < 10; i += 1) refused.push(await post(t.server!.url, token));
    expect(refused.map((a) => a.status)).toEqual(Array(10).fill(401));
    expect(refused[0]!.body.errors![0]!.message).toMatch(/expired/);
    expect(lookups()).toBe(10);
    expect((await post(t.server!.url, good)).status).toBe(200);
    expect((await post(t.server!.url, WRONG)).status).toBe(401);
  });

  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  it.each([
    [
      "a forged access token naming a key (kid)",
      (i: number) => `${part({ alg: "HS256", typ: ACCESS_TOKEN_TYPE, kid: `key${i}` })}.${part({ sub: "someone" })}.${part({ signature: i })}`,
    ],
    [
      "a forged access token whose kid is no key's id (a number, an object, an array)",
      (i: number) =>
        `${part({ alg: "HS256", typ: ACCESS_TOKEN_TYPE, kid: [i, { key: i }, [`key${i}`]][i % 3] })}.${part({ sub: "someone" })}.${part({ signature: i })}`,
    ],
    [
      "a forged access token naming no key",
      (i: number) => `${part({ alg: "ES256", typ: ACCESS_TOKEN_TYPE })}.${part({ sub: "someone", exp: 1_000_000 + i })}.${part({ signature: i })}`,
    ],
    ["another JWT, no sign-in configured (taken for an API key)", (i: number) => `${part({ alg: "none" })}.${part({ i })}.x${i}`],
  ])("%s is counted: past the burst it is refused with 429 before any lookup", async (_, forged) => {
    const { t, lookups, forget } = await startHeard(new InProcessTokenBuckets({ perMinute: 6, burst: 3 }));
    forget();
    const statuses = [];
    for (let i = 0; i < 10; i += 1) statuses.push((await post(t.server!.url, forged(i))).status);
    expect(statuses).toEqual([401, 401, 401, ...Array(7).fill(429)]);
    expect(lookups()).toBeLessThanOrEqual(3);
  });

  it("a forged access token whose kid is no key's id is refused as any forged one, over HTTP and graphql-ws, with nothing internal", async () => {
    const { t } = await startHeard(new InProcessTokenBuckets({ perMinute: 60, burst: 60 }));
    for (const kid of [123, { a: 1 }, ["x"], null, true, "\u0000", "k".repeat(5_000)]) {
      const forged = `${part({ alg: "HS256", typ: ACCESS_TOKEN_TYPE, kid })}.${part({ sub: "someone" })}.${part({ signature: 1 })}`;
      const answer = await post(t.server!.url, forged);
      expect([answer.status, answer.body.errors?.[0]?.extensions?.code, answer.body.errors?.[0]?.message]).toEqual([
        401,
        "UNAUTHENTICATED",
        "Invalid access token.",
      ]);
      expect(await connectSocket(t.server!.wsUrl, forged)).toEqual({ code: 4401, reason: "Invalid access token." });
    }
  });

  it("sent all at once, as many wrong keys are looked up as the burst allows, not one more; good keys sent at once are all served", async () => {
    // Each failure takes its token a while after its lookup, as a distant Redis would.
    const buckets = new InProcessTokenBuckets({ perMinute: 6, burst: 3 });
    const slow: TokenBuckets = { peek: (key) => buckets.peek(key), take: (key) => setTimeout(100).then(() => buckets.take(key)) };
    const { t, lookups, forget } = await startHeard(slow);
    const good = await t.createPrincipal("good");
    forget();
    const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => post(t.server!.url, `${WRONG}${i}`)));
    // A 401 is a key looked up and refused; every other one was refused unread.
    expect(answers.filter((a) => a.status === 401)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(147);
    expect(lookups()).toBeLessThanOrEqual(3);
    // A good key sent many times at once from another address is served every time.
    const served = await Promise.all(Array.from({ length: 20 }, () => post(t.server!.url, good, "127.0.0.2")));
    expect(served.map((a) => a.status)).toEqual(Array(20).fill(200));
  });

  it("over graphql-ws: past the burst, connection_init with a wrong key closes the socket with 4429 before any lookup", async () => {
    const { t, lookups, forget } = await startHeard(new InProcessTokenBuckets({ perMinute: 6, burst: 2 }));
    const wsUrl = t.server!.wsUrl;
    const good = await t.createPrincipal("good");
    forget();

    expect(await connectSocket(wsUrl, WRONG)).toEqual({ code: 4401, reason: "Invalid API key." });
    expect(await connectSocket(wsUrl, WRONG)).toEqual({ code: 4401, reason: "Invalid API key." });
    expect(lookups()).toBe(2);

    for (let i = 0; i < 10; i += 1) {
      const closed = await connectSocket(wsUrl, `${WRONG}${i}`);
      expect(closed).toMatchObject({ code: 4429, reason: expect.stringMatching(/^Too many failed authentications from this address: try again in \d+ s\.$/) });
    }
    expect(lookups()).toBe(2);

    // HTTP and sockets draw from the one bucket of the address.
    expect((await post(t.server!.url, WRONG)).status).toBe(429);
    expect(lookups()).toBe(2);

    expect(await connectSocket(wsUrl, good, "127.0.0.2")).toBe("acknowledged");
  });
});

describe("AUTH_FAILURES_PER_MINUTE and AUTH_FAILURES_BURST", () => {
  it("count 60 failures a minute, 20 at once, unless set; 0 counts none", () => {
    expect(loadConfig({}).authFailures).toEqual({ perMinute: 60, burst: 20 });
    expect(loadConfig({ AUTH_FAILURES_PER_MINUTE: "6", AUTH_FAILURES_BURST: "2" }).authFailures).toEqual({ perMinute: 6, burst: 2 });
    expect(loadConfig({ AUTH_FAILURES_PER_MINUTE: "0" }).authFailures).toBeUndefined();
  });

  it("hold the server's API: a wrong key past the burst gets 429", async () => {
    const DATA_DIR = mkdtempSync(path.join(tmpdir(), "dossier-floods-"));
    folders.push(DATA_DIR);
    const server = spawnBuilt("src/main.ts", { env: { PORT: "0", DATA_DIR, AUTH_REQUIRED: "true", AUTH_FAILURES_PER_MINUTE: "6", AUTH_FAILURES_BURST: "2" } });
    running.push(server);
    const url = (JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url;
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await post(url, WRONG)).status);
    expect(statuses).toEqual([401, 401, 429, 429]);
  }, 90_000);
});

const redisUrl = inject("redisUrl");

describe.runIf(redisUrl)("failed authentications shared through Redis", () => {
  it("failures counted by one instance refuse the address on another before its lookup", async () => {
    const settings = { perMinute: 6, burst: 2 };
    const prefix = `dossier:test-${randomUUID()}:auth-failures:`;
    const [one, two] = [await RedisTokenBuckets.connect(redisUrl!, settings, { prefix }), await RedisTokenBuckets.connect(redisUrl!, settings, { prefix })];
    closing.push(one, two);
    const [first, second] = [await startHeard(one), await startHeard(two)];

    expect((await post(first.t.server!.url, WRONG)).status).toBe(401);
    expect((await post(first.t.server!.url, WRONG)).status).toBe(401);
    expect(first.lookups()).toBe(2);

    const refused = await post(second.t.server!.url, WRONG);
    expect(refused.status).toBe(429);
    expect(refused.body.errors![0]!.extensions).toMatchObject({ code: "RATE_LIMITED" });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(second.lookups()).toBe(0);
    expect(await connectSocket(second.t.server!.wsUrl, WRONG)).toMatchObject({ code: 4429 });
    expect(second.lookups()).toBe(0);

    // Looking at a bucket takes nothing from it: another address still has its burst.
    expect((await post(second.t.server!.url, WRONG, "127.0.0.2")).status).toBe(401);
    expect((await post(second.t.server!.url, WRONG, "127.0.0.2")).status).toBe(401);
    expect((await post(second.t.server!.url, WRONG, "127.0.0.2")).status).toBe(429);
  });
});
