// A sign-in principal's rate limit: an end user's sign-in tokens and the API keys it mints with
// them all draw from its principal's bucket (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE); another end
// user keeps its own.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { InProcessTokenBuckets } from "../../src/server/rate-limit.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ISSUER = "https://auth.example.test/";
const AUDIENCE = "dossier-app";

let t: TestApp | undefined;
let jwks: Server | undefined;
afterEach(async () => {
  await t?.close();
  await new Promise((resolve) => (jwks ? jwks.close(resolve) : resolve(undefined)));
  t = jwks = undefined;
});

describe("a sign-in principal's rate limit", () => {
  it("its sign-in tokens and the keys it minted draw from one bucket; another end user is not held back", async () => {
    const kid = randomUUID();
    const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
    jwks = createServer((_request, response) => void response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks!.listen(0, "127.0.0.1", resolve));
    const host = `127.0.0.1:${(jwks.address() as AddressInfo).port}`;
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      signIn: { jwksUrl: `http://${host}/jwks.json`, issuer: ISSUER, audience: AUDIENCE, principalClaim: "sub", allowedHosts: [host], cooldownMs: 400 },
      // Three requests per credential at once; six per principal, refilled once a minute.
      rateLimits: new InProcessTokenBuckets({ perMinute: 6, burst: 3 }),
      principalRateLimits: new InProcessTokenBuckets({ perMinute: 1, burst: 6 }),
    });
    const signed = (sub: string) =>
      new SignJWT({})
        .setProtectedHeader({ alg: "ES256", kid, typ: "JWT" })
        .setSubject(sub)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(privateKey);
    const post = async (bearer: string, query: string) => {
      const response = await fetch(t!.server!.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ query }),
      });
      return { status: response.status, body: (await response.json()) as { data?: any } };
    };
    const mintKey = async (bearer: string) =>
      (await post(bearer, 'mutation { createApiKey(input: { name: "backend" }) { ... on CreateApiKeySuccess { secret } } }')).body.data.createApiKey
        .secret as string;

    // Two keys minted with Alice's sign-in token: two of her principal's six tokens.
    const alice = await signed("alice");
    const keys = [await mintKey(alice), await mintKey(alice)];
    const read = "{ viewer { id } }";
    const statuses: number[] = [];
    // A fresh sign-in token of hers (her sign-in's bucket has one request left), then three reads through each key.
    statuses.push((await post(await signed("alice"), read)).status);
    for (const key of keys) for (let i = 0; i < 3; i += 1) statuses.push((await post(key, read)).status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(4);
    expect(statuses.filter((status) => status === 429)).toHaveLength(3);
    expect((await post(await signed("bob"), read)).status).toBe(200);
  });
});
