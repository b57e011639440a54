// Behind a reverse proxy (TRUSTED_PROXIES), every per-address protection counts the client the
// proxy names in X-Forwarded-For, not the proxy: one client sending wrong keys is locked out
// alone, and one client's connections do not use up another's. Here the server is reached over
// loopback from 127.0.0.1, standing for the proxy, with each "client" its X-Forwarded-For.
import { mkdtempSync, rmSync } from "node:fs";
import { once } from "node:events";
import { createServer, request } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { recordClientAddresses, TrustedProxies } from "../../src/server/client-address.js";
import { capConnectionsPerClient } from "../../src/server/client-connections.js";
import { InProcessTokenBuckets } from "../../src/server/rate-limit.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { startTestApp, type TestApp, type TestAppOptions } from "../support/test-app.js";

const apps: TestApp[] = [];
const sockets: WebSocket[] = [];
const running: Spawned[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const app of apps.splice(0)) await app.close();
  await killAll(running);
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

async function start(options: TestAppOptions): Promise<TestApp> {
  const t = await startTestApp("pglite", { listen: true, authRequired: true, ...options });
  apps.push(t);
  return t;
}

type Answer = { status: number; code?: unknown };

/** A GraphQL POST with `key` (empty: none), sent through the "proxy" for the client `forwardedFor` (none: no header). */
function post(url: string, key: string, forwardedFor?: string): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) };
  if (forwardedFor !== undefined) headers["x-forwarded-for"] = forwardedFor;
  return new Promise((resolve, reject) => {
    const sent = request(url, { method: "POST", headers, agent: false }, (response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      response.on("end", () => {
        const body = JSON.parse(text) as { errors?: { extensions?: { code?: unknown } }[] };
        resolve({ status: response.statusCode!, code: body.errors?.[0]?.extensions?.code });
      });
    });
    sent.on("error", reject);
    sent.end(JSON.stringify({ query: "{ __typename }" }));
  });
}

type Opened = "acknowledged" | { code: number; reason: string } | { status: number } | { error: string };

/** Opens a graphql-ws connection for the client `forwardedFor`; an acknowledged one stays open (closed after the test). */
function openSocket(wsUrl: string, key: string, forwardedFor: string): Promise<Opened> {
  return new Promise((resolve) => {
    const socket = new WebSocket(wsUrl, "graphql-transport-ws", { headers: { "x-forwarded-for": forwardedFor } });
    sockets.push(socket);
    socket.on("unexpected-response", (_, response) => {
      resolve({ status: response.statusCode! });
      socket.terminate();
    });
    socket.on("error", (error) => resolve({ error: error.message }));
    socket.on("open", () => socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${key}` } })));
    socket.on("message", (data: Buffer) => {
      if ((JSON.parse(data.toString("utf8")) as { type: string }).type === "connection_ack") resolve("acknowledged");
    });
    socket.on("close", (code: number, reason: Buffer) => resolve({ code, reason: reason.toString("utf8") }));
  });
}

const WRONG = "dsk_wrong_key_that_matches_nothing";
const [A, B] = ["203.0.113.1", "203.0.113.2"];

describe("failed authentications behind a trusted proxy", () => {
  it("count each forwarded client on its own: one locked out with 429, another still served, over HTTP and graphql-ws", async () => {
    const t = await start({ trustedProxies: ["127.0.0.1"], authFailures: new InProcessTokenBuckets({ perMinute: 6, burst: 2 }) });
    const url = t.server!.url;
    const good = await t.createPrincipal("good");

    expect([(await post(url, WRONG, A)).status, (await post(url, WRONG, A)).status]).toEqual([401, 401]);
    expect(await post(url, WRONG, A)).toEqual({ status: 429, code: "RATE_LIMITED" });
    expect(await post(url, good, A)).toEqual({ status: 429, code: "RATE_LIMITED" });
    expect(await openSocket(t.server!.wsUrl, good, A)).toMatchObject({ code: 4429 });

    // Another client behind the same proxy has its own bucket.
    expect((await post(url, good, B)).status).toBe(200);
    expect(await openSocket(t.server!.wsUrl, good, B)).toBe("acknowledged");
    expect((await post(url, WRONG, B)).status).toBe(401);
    // The proxy's own requests (no header) are its own address's, not a client's.
    expect((await post(url, good)).status).toBe(200);
  });

  it("count a chain `spoofed, real` against the real client the proxy appended, never the spoofed one", async () => {
    const t = await start({ trustedProxies: ["127.0.0.1"], authFailures: new InProcessTokenBuckets({ perMinute: 6, burst: 2 }) });
    const url = t.server!.url;
    const good = await t.createPrincipal("good");
    const spoofed = "198.51.100.9";

    expect([(await post(url, WRONG, `${spoofed}, ${A}`)).status, (await post(url, WRONG, `${spoofed}, ${A}`)).status]).toEqual([401, 401]);
    // The failures were the real client's: it is locked out however it is named...
    expect((await post(url, good, A)).status).toBe(429);
    expect((await post(url, good, `${B}, ${A}`)).status).toBe(429);
    // ...and the address it wrote into the header was charged nothing.
    expect((await post(url, good, spoofed)).status).toBe(200);
  });

  it("without TRUSTED_PROXIES, ignore X-Forwarded-For: a spoofed header does not leave the address's bucket", async () => {
    const t = await start({ authFailures: new InProcessTokenBuckets({ perMinute: 6, burst: 2 }) });
    const url = t.server!.url;
    const good = await t.createPrincipal("good");
    expect([(await post(url, WRONG, A)).status, (await post(url, WRONG, A)).status]).toEqual([401, 401]);
    expect((await post(url, good, B)).status).toBe(429);
    expect(await openSocket(t.server!.wsUrl, good, B)).toMatchObject({ code: 4429 });
    expect((await post(url, good)).status).toBe(429);
  });
});

describe("RATE_LIMIT_PER_MINUTE behind a trusted proxy", () => {
  it("gives each forwarded client's requests without a credential a bucket of its own", async () => {
    const t = await start({ trustedProxies: ["127.0.0.1"], rateLimits: new InProcessTokenBuckets({ perMinute: 6, burst: 2 }) });
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await post(t.server!.url, "", A)).status);
    expect(statuses).toEqual([401, 401, 429]);
    expect((await post(t.server!.url, "", B)).status).toBe(401);
    expect((await post(t.server!.url, "", `${B}, ${A}`)).status).toBe(429);
  });
});

describe("MAX_CONNECTIONS_PER_CLIENT behind a trusted proxy", () => {
  it("counts each forwarded client's WebSockets and requests on their own; the proxy's connections are not capped as its own", async () => {
    const t = await start({ trustedProxies: ["127.0.0.1"], connections: { maxPerClient: 2, requestTimeoutMs: 30_000 } });
    const { url, wsUrl } = t.server!;
    const good = await t.createPrincipal("good");

    expect([await openSocket(wsUrl, good, A), await openSocket(wsUrl, good, A)]).toEqual(["acknowledged", "acknowledged"]);
    // A third of the client's is refused before it opens; so is a request of the client's.
    expect(await openSocket(wsUrl, good, A)).toEqual({ status: 429 });
    expect(await post(url, good, A)).toEqual({ status: 429, code: "TOO_MANY_CONNECTIONS" });

    // Another client behind the same proxy has its own two places.
    expect([await openSocket(wsUrl, good, B), await openSocket(wsUrl, good, B)]).toEqual(["acknowledged", "acknowledged"]);
    expect((await post(url, good, `198.51.100.9, ${B}`)).status).toBe(429);
    expect((await post(url, good, "198.51.100.9")).status).toBe(200);

    // A socket closing gives its client the place back.
    const closed = new Promise((resolve) => sockets[0]!.once("close", resolve));
    sockets[0]!.close();
    await closed;
    await expect.poll(() => openSocket(wsUrl, good, A)).toBe("acknowledged");
  });

  it("gives back the places of requests pipelined on a connection that closes before they are answered", async () => {
    // A server whose answers take a while, so that the second and third requests wait behind the first.
    const server = createServer();
    const trusted = new TrustedProxies(["127.0.0.1"]);
    recordClientAddresses(server, trusted);
    const clients = capConnectionsPerClient(server, { maxPerClient: 3, requestTimeoutMs: 30_000 }, trusted);
    server.on(
      "request",
      clients.forwarded((_request, response) => void setTimeout(() => response.end("{}"), 200)),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const one = `GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nx-forwarded-for: ${A}\r\n\r\n`;
      const socket = connect(port, "127.0.0.1");
      await once(socket, "connect");
      socket.write(one.repeat(3));
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      const status = () =>
        new Promise<number>((resolve, reject) =>
          request(`http://127.0.0.1:${port}/`, { headers: { "x-forwarded-for": A }, agent: false }, (response) => {
            response.resume();
            resolve(response.statusCode!);
          })
            .on("error", reject)
            .end(),
        );
      // Every place comes back: the client has its three again.
      await expect.poll(async () => await Promise.all([status(), status(), status()]), { timeout: 3_000 }).toEqual([200, 200, 200]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("without TRUSTED_PROXIES, counts the peer's connections whatever X-Forwarded-For says", async () => {
    const t = await start({ connections: { maxPerClient: 2, requestTimeoutMs: 30_000 } });
    const { wsUrl } = t.server!;
    const good = await t.createPrincipal("good");
    expect([await openSocket(wsUrl, good, A), await openSocket(wsUrl, good, B)]).toEqual(["acknowledged", "acknowledged"]);
    expect(await openSocket(wsUrl, good, "198.51.100.9")).toMatchObject({ error: expect.any(String) });
  });
});

describe("TRUSTED_PROXIES at start", () => {
  const startServer = (env: Record<string, string>) => {
    const DATA_DIR = mkdtempSync(path.join(tmpdir(), "dossier-proxies-"));
    folders.push(DATA_DIR);
    const server = spawnBuilt("src/main.ts", { env: { PORT: "0", DATA_DIR, AUTH_REQUIRED: "true", ...env } });
    running.push(server);
    return server;
  };

  it("a bad entry is refused, named, before the server starts", async () => {
    const server = startServer({ TRUSTED_PROXIES: "127.0.0.1,proxy.internal" });
    expect((await server.exited).code).toBe(1);
    expect(server.output()).toMatch(/TRUSTED_PROXIES="127\.0\.0\.1,proxy\.internal": "proxy\.internal" is neither an IPv4 or IPv6 address nor a CIDR range/);
  }, 60_000);

  it("the server counts failed authentications by the clients its proxies name", async () => {
    const server = startServer({ TRUSTED_PROXIES: "127.0.0.1", AUTH_FAILURES_PER_MINUTE: "6", AUTH_FAILURES_BURST: "2" });
    const url = (JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url;
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await post(url, WRONG, A)).status);
    expect(statuses).toEqual([401, 401, 429]);
    expect((await post(url, WRONG, B)).status).toBe(401);
  }, 90_000);
});
