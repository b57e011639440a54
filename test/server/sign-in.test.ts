// An app's own sign-in (issue 35, point 3): a JWKS served on loopback by the test (listed in
// AUTH_JWKS_ALLOWED_HOSTS); each end user's JWT is its own principal, created once on first sight,
// isolated from the others; expired, wrongly signed, wrong-issuer, wrong-audience and unknown-key
// tokens get 401 with the reason; a key rotated into the JWKS is picked up without a restart, and
// made-up kids do not make the server read the JWKS again within the cooldown. HTTP, graphql-ws
// and SSE accept the token as they accept API keys, and keep a socket or stream open until its
// `exp`, however far ahead.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { createClient as createWsClient } from "graphql-ws";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ISSUER = "https://auth.example.test/";
const AUDIENCE = "dossier-app";
const COOLDOWN_MS = 400;

type Answer = { status: number; body: { data?: Record<string, any>; errors?: { message: string; extensions?: { code?: string } }[] } };
type SigningKey = { kid: string; privateKey: CryptoKey; jwk: JWK };

async function signingKey(kid = randomUUID()): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
}

/** The identity provider's JWKS endpoint: the keys it publishes can change, and its reads are counted. */
async function startJwks(keys: SigningKey[]): Promise<{ url: string; host: string; publish(keys: SigningKey[]): void; reads: number; close(): Promise<void> }> {
  const state = { keys, reads: 0 };
  const server: Server = createServer((_request, response) => {
    state.reads += 1;
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: state.keys.map((key) => key.jwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    host: `127.0.0.1:${port}`,
    publish: (next) => void (state.keys = next),
    get reads() {
      return state.reads;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `exp: null`: a token without an expiry. */
type Claims = { sub?: string; iss?: string; aud?: string; exp?: number | string | null };
const jwt = (key: SigningKey, claims: Claims = {}, kid = key.kid) => {
  const token = new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid, typ: "JWT" })
    .setSubject(claims.sub ?? "alice")
    .setIssuer(claims.iss ?? ISSUER)
    .setAudience(claims.aud ?? AUDIENCE)
    .setIssuedAt();
  return (claims.exp === null ? token : token.setExpirationTime(claims.exp ?? "5m")).sign(key.privateKey);
};

describe.each(backends)("the app's own sign-in on %s", (backend) => {
  let t: TestApp | undefined;
  let jwks: Awaited<ReturnType<typeof startJwks>> | undefined;
  afterEach(async () => {
    await t?.close();
    await jwks?.close();
    t = jwks = undefined;
  });

  async function start(keys: SigningKey[], { listed = true } = {}) {
    jwks = await startJwks(keys);
    t = await startTestApp(backend, {
      listen: true,
      authRequired: true,
      signIn: {
        jwksUrl: jwks.url,
        issuer: ISSUER,
        audience: AUDIENCE,
        principalClaim: "sub",
        allowedHosts: listed ? [jwks.host] : [],
        cooldownMs: COOLDOWN_MS,
      },
    });
    return t;
  }

  const gql = async (bearer: string | undefined, query: string, variables: Record<string, unknown> = {}): Promise<Answer> => {
    const response = await t!.app.yoga.fetch(
      new Request("http://127.0.0.1/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        body: JSON.stringify({ query, variables }),
      }),
    );
    return { status: response.status, body: (await response.json()) as Answer["body"] };
  };
  const createWorkspace = async (bearer: string, title: string) =>
    (await gql(bearer, `mutation { createWorkspace(input: { title: "${title}", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)).body
      .data!.createWorkspace.workspace.id as string;
  const viewer = async (bearer: string) => (await gql(bearer, "{ viewer { id name } }")).body.data?.viewer as { id: string; name: string } | undefined;
  const refusal = async (bearer: string) => {
    const answer = await gql(bearer, "{ viewer { id } }");
    return [answer.status, answer.body.errors?.[0]?.extensions?.code, answer.body.errors?.[0]?.message];
  };

  it("makes each end user its own principal, created once even by concurrent first requests, and isolated from the others", async () => {
    const key = await signingKey();
    await start([key]);
    const alice = await jwt(key, { sub: "alice" });
    const bob = await jwt(key, { sub: "bob" });

    // The keys read once already (by another user), then sixteen first requests of one user at once: one principal.
    expect(await viewer(await jwt(key, { sub: "warm-up" }))).toBeDefined();
    const seen = await Promise.all(Array.from({ length: 16 }, () => viewer(alice)));
    expect(new Set(seen.map((v) => v?.id)).size).toBe(1);
    expect(seen[0]!.name).toBe("alice");
    const rows = await t!.app.db.prisma.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM principal WHERE sign_in_subject = $1`,
      `${ISSUER} alice`,
    );
    expect(rows[0]!.n).toBe(1);

    const aliceWorkspace = await createWorkspace(alice, "Alice's");
    const bobWorkspace = await createWorkspace(bob, "Bob's");
    expect((await viewer(bob))!.id).not.toBe(seen[0]!.id);
    const read = async (bearer: string, id: string) => (await gql(bearer, `query($id: ID!) { node(id: $id) { id } }`, { id })).body.data!.node;
    const listed = async (bearer: string) =>
      ((await gql(bearer, "{ workspaces { edges { node { id } } } }")).body.data!.workspaces.edges as { node: { id: string } }[]).map((e) => e.node.id);
    expect(await read(alice, aliceWorkspace)).toEqual({ id: aliceWorkspace });
    expect(await read(bob, aliceWorkspace)).toBeNull();
    expect(await read(alice, bobWorkspace)).toBeNull();
    expect(await listed(alice)).toEqual([aliceWorkspace]);
    expect(await listed(bob)).toEqual([bobWorkspace]);
    // A person with every scope, but not an API key: it cannot mint access tokens.
    const minted = await gql(
      alice,
      `mutation($w: ID!) { createAccessToken(input: { grants: [{ resourceId: $w, operations: [READ] }] }) { __typename ... on Error { message } } }`,
      { w: aliceWorkspace },
    );
    expect(minted.body.data!.createAccessToken.__typename).toBe("ForbiddenError");
    // A new token of the same user is the same principal (not a new one per token).
    expect((await viewer(await jwt(key, { sub: "alice" })))!.id).toBe(seen[0]!.id);
  });

  it("refuses expired, wrongly signed, wrong-issuer, wrong-audience and unknown-key tokens with 401 and the reason", async () => {
    const key = await signingKey();
    const stranger = await signingKey();
    await start([key]);
    const expired = await jwt(key, { exp: Math.floor(Date.now() / 1000) - 60 });
    expect(await refusal(expired)).toEqual([401, "UNAUTHENTICATED", "The sign-in token expired."]);
    // A token without an expiry would act for its user for ever; one whose expiry no date holds is as bad.
    expect(await refusal(await jwt(key, { exp: null }))).toEqual([401, "UNAUTHENTICATED", "The sign-in token has no expiry (exp)."]);
    expect(await refusal(await jwt(key, { exp: 1e17 }))).toEqual([401, "UNAUTHENTICATED", "The sign-in token's exp claim is not valid."]);
    expect(await refusal(await jwt(key, { iss: "https://other.example/" }))).toEqual([
      401,
      "UNAUTHENTICATED",
      "The sign-in token was not issued by this server's identity provider (iss).",
    ]);
    expect(await refusal(await jwt(key, { aud: "another-app" }))).toEqual([401, "UNAUTHENTICATED", "The sign-in token is not addressed to this server (aud)."]);
    expect(await refusal(await jwt(stranger))).toEqual([
      401,
      "UNAUTHENTICATED",
      "The sign-in token was signed with a key the identity provider does not publish (kid).",
    ]);
    // Signed by a key the JWKS does not hold, under the kid of one it does.
    expect(await refusal(await jwt(stranger, {}, key.kid))).toEqual([401, "UNAUTHENTICATED", "The sign-in token's signature does not verify."]);
    // Nobody was created by a refused token; API keys and garbage are still what they were.
    expect(await t!.app.db.prisma.principal.count({ where: { signInSubject: { not: null } } })).toBe(0);
    expect(await refusal("dsk_not-a-key")).toEqual([401, "UNAUTHENTICATED", "Invalid API key."]);
    const apiKey = await t!.createPrincipal("Team backend");
    expect((await viewer(apiKey))!.name).toBe("Team backend");
  });

  it("reads the JWKS through the outbound guard: a loopback JWKS not listed in AUTH_JWKS_ALLOWED_HOSTS is never read", async () => {
    const key = await signingKey();
    await start([key], { listed: false });
    const answer = await gql(await jwt(key), "{ viewer { id } }");
    expect([answer.status, answer.body.errors?.[0]?.extensions?.code]).toEqual([503, "SIGN_IN_UNAVAILABLE"]);
    expect(jwks!.reads).toBe(0);
    expect(await t!.app.db.prisma.principal.count({ where: { signInSubject: { not: null } } })).toBe(0);
  });

  it("picks up a key rotated into the JWKS without a restart, and reads the JWKS at most once per cooldown for unknown kids", async () => {
    const first = await signingKey();
    await start([first]);
    expect(await viewer(await jwt(first))).toBeDefined();
    const readsBefore = jwks!.reads;

    // Made-up kids in a burst: at most one more read of the JWKS.
    const stranger = await signingKey();
    for (let i = 0; i < 10; i++) expect((await refusal(await jwt(stranger, {}, `made-up-${i}`)))[0]).toBe(401);
    expect(jwks!.reads - readsBefore).toBeLessThanOrEqual(1);

    // The provider rotates: the new key replaces the old one.
    const second = await signingKey();
    jwks!.publish([second]);
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 100));
    const alice = await viewer(await jwt(second, { sub: "alice" }));
    expect(alice?.name).toBe("alice");
    expect(jwks!.reads).toBeGreaterThan(readsBefore);
  });

  it("accepts the token over graphql-ws and SSE as API keys are accepted, and refuses a bad one there too", async () => {
    const key = await signingKey();
    await start([key]);
    const alice = await jwt(key, { sub: "alice" });
    const bob = await jwt(key, { sub: "bob" });
    const workspace = await createWorkspace(alice, "Alice's");

    // graphql-ws: the token in the connection parameters; an expired one closes the socket with 4401.
    const overSocket = (token: string) =>
      new Promise<{ data?: unknown; closed?: { code: number; reason: string } }>((resolve) => {
        const client = createWsClient({
          url: t!.server!.wsUrl,
          webSocketImpl: WebSocket,
          retryAttempts: 0,
          connectionParams: { headers: { authorization: `Bearer ${token}` } },
          on: { closed: (event) => resolve({ closed: event as { code: number; reason: string } }) },
        });
        client.subscribe(
          { query: "{ viewer { name } }" },
          { next: (result) => resolve({ data: result.data }), error: () => undefined, complete: () => void client.dispose() },
        );
      });
    expect((await overSocket(alice)).data).toEqual({ viewer: { name: "alice" } });
    // A socket lives as long as its token: closed with 4401 "token expired" at `exp`.
    const shortLived = await jwt(key, { sub: "alice", exp: Math.floor(Date.now() / 1000) + 2 });
    const started = Date.now();
    const ended = await new Promise<{ code: number; reason: string }>((resolve) => {
      const client = createWsClient({
        url: t!.server!.wsUrl,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        connectionParams: { headers: { authorization: `Bearer ${shortLived}` } },
        on: { closed: (event) => resolve(event as { code: number; reason: string }) },
      });
      client.subscribe(
        { query: "subscription($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }", variables: { w: workspace } },
        { next: () => undefined, error: () => undefined, complete: () => undefined },
      );
    });
    expect(ended).toMatchObject({ code: 4401, reason: "token expired" });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await overSocket(await jwt(key, { exp: Math.floor(Date.now() / 1000) - 60 }))).closed).toMatchObject({
      code: 4401,
      reason: "The sign-in token expired.",
    });

    // SSE: the other user's workspace is not found; a wrong audience is 401.
    const sse = (token: string) =>
      fetch(
        `${t!.server!.url}?query=${encodeURIComponent("subscription($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }")}&variables=${encodeURIComponent(JSON.stringify({ w: workspace }))}`,
        { headers: { accept: "text/event-stream", authorization: `Bearer ${token}` } },
      );
    expect(await (await sse(bob)).text()).toContain("NOT_FOUND");
    const wrongAudience = await sse(await jwt(key, { aud: "another-app" }));
    expect(wrongAudience.status).toBe(401);
    expect(await wrongAudience.text()).toContain("not addressed to this server");
    const own = await sse(alice);
    expect(own.status).toBe(200);
    await own.body?.cancel();
    // An SSE stream also lives as long as its token: it ends with TOKEN_EXPIRED at `exp`.
    const expiring = await sse(await jwt(key, { sub: "alice", exp: Math.floor(Date.now() / 1000) + 2 }));
    const sseStarted = Date.now();
    expect(expiring.status).toBe(200);
    expect(await expiring.text()).toContain("TOKEN_EXPIRED");
    expect(Date.now() - sseStarted).toBeLessThan(5_000);
  });

  it("keeps a socket and an SSE stream open, delivering events, for a token that expires weeks ahead", async () => {
    const key = await signingKey();
    await start([key]);
    // Further ahead than one Node timer reaches (about 24.8 days).
    const token = await jwt(key, { sub: "alice", exp: "40d" });
    const workspace = await createWorkspace(token, "Alice's");
    const query = "subscription($w: ID!) { workspaceEvents(workspaceId: $w) { checkpointRevision } }";
    const listening = t!.listeners();
    const received: number[] = [];
    let closed: { code: number; reason: string } | undefined;
    const client = createWsClient({
      url: t!.server!.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { headers: { authorization: `Bearer ${token}` } },
      on: { closed: (event) => void (closed = { code: (event as CloseEvent).code, reason: (event as CloseEvent).reason }) },
    });
    client.subscribe<{ workspaceEvents: { checkpointRevision: number } }>(
      { query, variables: { w: workspace } },
      { next: (result) => void received.push(result.data!.workspaceEvents.checkpointRevision), error: () => undefined, complete: () => undefined },
    );
    const stream = await fetch(`${t!.server!.url}?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(JSON.stringify({ w: workspace }))}`, {
      headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
    });
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    await vi.waitFor(() => expect({ listening: t!.listeners(), closed }).toEqual({ listening: listening + 2, closed: undefined }));
    const id = decodeGlobalId(workspace)!.id;
    const event = {
      kind: "CHECKPOINT_UPDATED" as const,
      workspaceId: id,
      checkpointRevision: 1,
      goalVersion: null,
      link: null,
      runId: null,
      at: new Date().toISOString(),
    };
    t!.app.events.publish("workspace:event", id, event);
    await vi.waitFor(() => expect({ received, closed }).toEqual({ received: [1], closed: undefined }));
    let text = "";
    while (!text.includes('"checkpointRevision":1')) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += chunk.value;
    }
    expect(text).not.toContain("TOKEN_EXPIRED");
    expect(text).toContain('"checkpointRevision":1');
    await reader.cancel();
    await client.dispose();
  });
});
