// The identity provider's keys unreadable for a moment (its JWKS answers 500): nothing is refused.
// HTTP answers 503 SIGN_IN_UNAVAILABLE, which clients retry; a socket is closed with 1013 (try
// again later) as for a database failure — not 4401, which graphql-ws clients and the SDK take as
// final, so a signed-in page would lose its live updates for good. The SDK's subscription
// reconnects and is served once the keys are back.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterEach, expect, it } from "vitest";
import WebSocket from "ws";
import { createClient } from "../../sdk/client.js";
import { ViewerDocument } from "../../sdk/generated/graphql.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const REASON = "The identity provider's keys cannot be read right now; try again shortly.";

let t: TestApp | undefined;
let jwks: Server | undefined;
afterEach(async () => {
  await t?.close();
  await new Promise((resolve) => (jwks ? jwks.close(resolve) : resolve(undefined)));
  t = jwks = undefined;
});

/** An identity provider whose JWKS endpoint answers 500 while `down`; its reads are counted. */
async function start() {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  const provider = { down: true, reads: 0 };
  jwks = createServer((_request, response) => {
    provider.reads += 1;
    if (provider.down) response.writeHead(500).end("down");
    else response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwks!.listen(0, "127.0.0.1", resolve));
  const { port } = jwks.address() as AddressInfo;
  t = await startTestApp("pglite", {
    listen: true,
    authRequired: true,
    signIn: {
      jwksUrl: `http://127.0.0.1:${port}/jwks`,
      issuer: "https://idp.example.test/",
      audience: "app",
      principalClaim: "sub",
      allowedHosts: [`127.0.0.1:${port}`],
      cooldownMs: 100,
    },
  });
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: "k1" })
    .setSubject("alice")
    .setIssuer("https://idp.example.test/")
    .setAudience("app")
    .setExpirationTime("5m")
    .sign(privateKey);
  return { provider, token, app: t };
}

const closeOf = (url: string, token: string) =>
  new Promise<{ code: number; reason: string }>((resolve) => {
    const socket = new WebSocket(url, "graphql-transport-ws");
    socket.on("open", () => socket.send(JSON.stringify({ type: "connection_init", payload: { headers: { authorization: `Bearer ${token}` } } })));
    socket.on("close", (code, reason) => resolve({ code, reason: String(reason) }));
  });

it("answers HTTP with a retryable 503 and closes a socket with 1013 (try again later), never 4401", async () => {
  const { provider, token, app } = await start();
  const answer = await fetch(app.server!.url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: "{ viewer { id } }" }),
  });
  const body = (await answer.json()) as { errors: { message: string; extensions: { code: string } }[] };
  expect([answer.status, body.errors[0]!.extensions.code, body.errors[0]!.message]).toEqual([503, "SIGN_IN_UNAVAILABLE", REASON]);
  expect(await closeOf(app.server!.wsUrl, token)).toEqual({ code: 1013, reason: REASON });
  expect(provider.reads).toBeGreaterThan(0);
});

it("the SDK's subscription is retried through the outage and served once the keys can be read", async () => {
  const { provider, token, app } = await start();
  let sockets = 0;
  const client = createClient({
    url: app.server!.url,
    webSocketImpl: class extends WebSocket {
      constructor(...args: ConstructorParameters<typeof WebSocket>) {
        super(...args);
        sockets += 1;
        // The provider recovers while the first socket is being refused.
        if (sockets === 1) this.once("close", () => void (provider.down = false));
      }
    },
    headers: { authorization: `Bearer ${token}` },
  });
  try {
    const served: unknown[] = [];
    for await (const result of client.subscribe(ViewerDocument, {})) served.push(result);
    expect(served).toEqual([{ viewer: expect.objectContaining({ name: "alice" }) }]);
    expect(sockets).toBe(2);
  } finally {
    await client.close();
  }
}, 30_000);
