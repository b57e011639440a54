// No DNS rebinding: a page whose name was re-pointed at 127.0.0.1 reaches the keyless embedded
// default under its own name. Requests whose Host is not listed (ALLOWED_HOSTS; the loopback names
// by default) get 421 before anything executes — over HTTP, SSE and WebSocket upgrades — and the
// same requests under a listed name work. A WebSocket's Origin is held to the listed names, not to
// the Host the page chose.
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { loadConfig } from "../../src/config.js";
import { startHttpServer } from "../../src/server/http-server.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Answer = { status: number; contentType: string; body: string };

/** One HTTP request with a Host of the test's choosing (fetch would send the URL's). */
function send(url: string, host: string, init: { method: string; body?: string; accept?: string }): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: init.method,
        headers: { host, "content-type": "application/json", accept: init.accept ?? "application/json" },
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
          // An event stream stays open: its first event is enough.
          if (response.headers["content-type"]?.startsWith("text/event-stream") && body.includes("\n\n")) response.destroy();
        });
        const done = () => resolve({ status: response.statusCode ?? 0, contentType: String(response.headers["content-type"] ?? ""), body });
        response.on("end", done);
        response.on("close", done);
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

/** The status a WebSocket upgrade gets (101 when it opens). */
function upgrade(wsUrl: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(wsUrl, "graphql-transport-ws", { headers });
    socket.once("open", () => {
      socket.close();
      resolve(101);
    });
    socket.once("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
    socket.once("error", () => resolve(-1));
  });
}

describe("the host allow-list", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("answers 421 to a rebound name over HTTP, SSE and WebSocket and changes nothing; the listed names work", async () => {
    t = await startTestApp("pglite", { listen: true });
    const { url, wsUrl, port } = t.server!;
    const create = JSON.stringify({ query: 'mutation { createWorkspace(input: { title: "rebound", goal: "g" }) { __typename } }' });
    const workspaces = async () => await t!.app.db.prisma.workspace.count();

    const rebound = "rebind.example:4000";
    const post = await send(url, rebound, { method: "POST", body: create });
    expect(post.status).toBe(421);
    expect(JSON.parse(post.body).errors[0].extensions.code).toBe("MISDIRECTED_REQUEST");
    const read = await send(`${url}?query=${encodeURIComponent("{ workspaces(first: 5) { edges { node { id } } } }")}`, rebound, { method: "GET" });
    expect(read.status).toBe(421);
    expect(await workspaces()).toBe(0);

    // The same mutation under the loopback names (any port) and the address itself.
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `LOCALHOST.:${port}`]) {
      expect((await send(url, host, { method: "POST", body: create })).status).toBe(200);
    }
    expect(await workspaces()).toBe(3);
    const workspace = await t.app.db.prisma.workspace.findFirstOrThrow();

    // SSE: a subscription over HTTP is refused the same way, and streams under a listed name.
    const subscription = `${url}?query=${encodeURIComponent(`subscription { workspaceEvents(workspaceId: "${workspace.id}") { __typename } }`)}`;
    const sse = await send(subscription, rebound, { method: "GET", accept: "text/event-stream" });
    expect(sse.status).toBe(421);
    const listedSse = await send(subscription, `localhost:${port}`, { method: "GET", accept: "text/event-stream" });
    expect(listedSse.status).toBe(200);
    expect(listedSse.contentType).toMatch(/^text\/event-stream/);

    // WebSocket upgrades: the rebound name is refused even with a matching Origin (the old check compared the two).
    expect(await upgrade(wsUrl, { host: rebound, origin: `http://${rebound}` })).toBe(421);
    expect(await upgrade(wsUrl, { host: rebound })).toBe(421);
    expect(await upgrade(wsUrl, { host: `localhost:${port}`, origin: `http://localhost:${port}` })).toBe(101);
    expect(await upgrade(wsUrl, {})).toBe(101);
  });

  it("holds a WebSocket's Origin to the listed names, not to the Host it was sent with", async () => {
    t = await startTestApp("pglite", { listen: true, allowedHosts: ["dossier.example", "127.0.0.1"] });
    const { wsUrl, port } = t.server!;
    // A page of this server under a listed name (behind a proxy that keeps the Host).
    expect(await upgrade(wsUrl, { host: "dossier.example", origin: "https://dossier.example" })).toBe(101);
    // A page on another port of a listed name is another origin.
    expect(await upgrade(wsUrl, { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port + 1}` })).toBe(401);
    // Its own Host is no longer the measure: an Origin that is not listed is refused under any Host.
    expect(await upgrade(wsUrl, { host: `127.0.0.1:${port}`, origin: "http://localhost:5173" })).toBe(401);
    expect(await upgrade(wsUrl, { host: `localhost:${port}`, origin: `http://localhost:${port}` })).toBe(421);
    const other = await send(t.server!.url, `localhost:${port}`, { method: "POST", body: JSON.stringify({ query: "{ __typename }" }) });
    expect(other.status).toBe(421);
  });

  it("serves a server bound to another loopback address under that address", async () => {
    expect(loadConfig({ HOST: "127.0.0.2" }).allowedHosts).toEqual(["localhost", "127.0.0.1", "[::1]", "127.0.0.2"]);
    expect(loadConfig({ HOST: "::1" }).allowedHosts).toEqual(["localhost", "127.0.0.1", "[::1]"]);
    t = await startTestApp("pglite");
    const server = await startHttpServer({ app: t.app, port: 0, host: "127.0.0.2" });
    try {
      const body = JSON.stringify({ query: "{ __typename }" });
      expect((await send(server.url, `127.0.0.2:${server.port}`, { method: "POST", body })).status).toBe(200);
      expect((await send(server.url, `localhost:${server.port}`, { method: "POST", body })).status).toBe(200);
      expect((await send(server.url, `127.0.0.3:${server.port}`, { method: "POST", body })).status).toBe(421);
      expect(await upgrade(server.wsUrl, { host: `127.0.0.2:${server.port}`, origin: `http://127.0.0.2:${server.port}` })).toBe(101);
    } finally {
      await server.close();
    }
  });
});
