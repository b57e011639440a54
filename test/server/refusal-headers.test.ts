// What the server answers outside Yoga says the same to caches and browsers as Yoga's answers do
// (server/response-headers.ts): a rebound name's 421, another site's 403, a wrong path's 404, a
// forwarded client's 429 over its connection cap — over HTTP and as a refused WebSocket upgrade —
// ws's own 405 or 400 to a malformed upgrade or one at another path, and the 400 or 408 of a
// request that never arrived whole all carry Cache-Control: no-store, Vary: Origin and
// X-Content-Type-Options: nosniff.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Answer = { status: number; headers: IncomingHttpHeaders };
const PRIVATE = { "cache-control": "no-store", vary: "Origin", "x-content-type-options": "nosniff" };
const privateOf = ({ status, headers }: Answer) => ({
  status,
  "cache-control": headers["cache-control"],
  vary: headers.vary,
  "x-content-type-options": headers["x-content-type-options"],
});

/** One HTTP request with the headers (Host included) and path of the test's choosing. */
function send(url: string, path: string, headers: Record<string, string>, method = "GET"): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: target.hostname, port: target.port, path, method, headers, agent: false }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The refusal of a WebSocket upgrade. */
function refusedUpgrade(wsUrl: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl, "graphql-transport-ws", { headers });
    socket.once("open", () => reject(new Error("the upgrade was accepted")));
    // The server closes the connection after its refusal.
    socket.on("error", () => undefined);
    socket.once("unexpected-response", (_request, response) => {
      resolve({ status: response.statusCode ?? 0, headers: response.headers });
      response.destroy();
    });
  });
}

/** What the server writes back to bytes sent straight to its port, until it closes the connection. */
function rawExchange(url: string, bytes: string): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname, () => socket.write(bytes));
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = ""] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
      resolve({ status: Number(statusLine.split(" ")[1]), headers });
    });
  });
}

describe("the server's own refusals", () => {
  let t: TestApp;
  let proxied: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite", { listen: true, connections: { maxPerClient: 256, requestTimeoutMs: 400 } });
    proxied = await startTestApp("pglite", { listen: true, trustedProxies: ["127.0.0.1"], connections: { maxPerClient: 1, requestTimeoutMs: 30_000 } });
  });
  afterAll(async () => {
    await Promise.all([t?.close(), proxied?.close()]);
  });

  it("421 to a rebound name, 403 to another site's page, 404 at another spelling of the endpoint and at an unknown path", async () => {
    const { url, port } = t.server!;
    const own = `127.0.0.1:${port}`;
    const answers = [
      await send(url, "/graphql?query={__typename}", { host: "rebind.example" }),
      await send(url, "/graphql?query={__typename}", { host: own, origin: "https://evil.example" }),
      await send(url, "/x/graphql?query={__typename}", { host: own }),
      await send(url, "/nothing-here", { host: own }),
    ];
    expect(answers.map(privateOf)).toEqual([421, 403, 404, 404].map((status) => ({ status, ...PRIVATE })));
  });

  it("429 to a forwarded client over its connection cap, over HTTP", async () => {
    const { url, port } = proxied.server!;
    const target = new URL(url);
    // The client's one place is held by a request whose body has not all arrived.
    const holding = httpRequest({
      host: target.hostname,
      port: target.port,
      path: "/graphql",
      method: "POST",
      agent: false,
      headers: { host: `127.0.0.1:${port}`, "x-forwarded-for": "203.0.113.9", "content-type": "application/json", "content-length": "100" },
    });
    holding.on("error", () => undefined);
    holding.write("{");
    try {
      const another = () => send(url, "/graphql?query={__typename}", { host: `127.0.0.1:${port}`, "x-forwarded-for": "203.0.113.9" });
      await expect.poll(async () => (await another()).status).toBe(429);
      expect(privateOf(await another())).toEqual({ status: 429, ...PRIVATE });
      expect(await refusedUpgrade(proxied.server!.wsUrl, { "x-forwarded-for": "203.0.113.9" }).then(privateOf)).toEqual({ status: 429, ...PRIVATE });
    } finally {
      holding.destroy();
    }
  });

  it("a refused WebSocket upgrade: 421 to a rebound name, 401 to another site's page", async () => {
    const { wsUrl } = t.server!;
    const answers = [await refusedUpgrade(wsUrl, { host: "rebind.example" }), await refusedUpgrade(wsUrl, { origin: "https://evil.example" })];
    expect(answers.map(privateOf)).toEqual([421, 401].map((status) => ({ status, ...PRIVATE })));
  });

  it("ws's own refusals of an upgrade: 405 to a POST, 400 to a malformed one and to one at another path", async () => {
    const { url, port } = t.server!;
    const upgrade = (method: string, path: string, headers: string) =>
      rawExchange(url, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\n${headers}\r\n`);
    const valid = "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    const answers = [
      await upgrade("POST", "/graphql", valid),
      await upgrade("GET", "/graphql", "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"),
      await upgrade("GET", "/graphql", "Upgrade: h2c\r\n"),
      await upgrade("GET", "/graphql", "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\n"),
      await upgrade("GET", "/elsewhere", valid),
    ];
    expect(answers.map(privateOf)).toEqual([405, 400, 400, 400, 400].map((status) => ({ status, ...PRIVATE })));
  });

  it("400 to a request that is not HTTP, 408 to one whose headers never all arrive", async () => {
    const { url, port } = t.server!;
    const malformed = await rawExchange(url, "NOT HTTP AT ALL\r\n\r\n");
    const unfinished = await rawExchange(url, `GET /graphql HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
    expect([malformed, unfinished].map(privateOf)).toEqual([400, 408].map((status) => ({ status, ...PRIVATE })));
  });
});
