// No cross-site requests: the exact requests a page on another origin can make without a
// preflight — form, multipart and text/plain posts, a query or an SSE subscription over GET, a
// WebSocket from a foreign origin, and on plain http under a name that is not loopback's a GET that
// carries neither Origin nor Sec-Fetch-Site — execute nothing, read nothing and hold no
// subscription, on the embedded default (no key needed). Listed origins (CORS_ORIGINS) and
// non-browser clients keep working.
import { get, type IncomingMessage } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { loadConfig } from "../../src/config.js";
import { BARE_GET_MESSAGE, upgradeAllowed } from "../../src/server/cross-site.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const evil = "http://evil.example";

describe("cross-site requests", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("refuses form, multipart and text/plain posts of a mutation that runs as JSON, and executes nothing", async () => {
    t = await startTestApp("pglite", { listen: true });
    const mutation = 'mutation { createWorkspace(input: { title: "Forged", goal: "Sent by a form" }) { __typename } }';
    const url = t.server!.url;
    // The control: the same mutation, sent as JSON by a client, creates a workspace.
    const control = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: mutation }) });
    expect(await control.text()).toContain("CreateWorkspaceSuccess");
    const posts = (origin: Record<string, string>) => {
      // What Yoga's multipart parser reads (the GraphQL multipart request spec).
      const multipart = new FormData();
      multipart.set("operations", JSON.stringify({ query: mutation }));
      multipart.set("map", "{}");
      return Promise.all([
        fetch(url, {
          method: "POST",
          headers: { ...origin, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ query: mutation }),
        }),
        fetch(url, { method: "POST", headers: origin, body: multipart }),
        fetch(url, { method: "POST", headers: { ...origin, "content-type": "text/plain" }, body: JSON.stringify({ query: mutation }) }),
      ]);
    };
    const codeOf = async (response: Response) => ((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code;
    // From another site's page: refused by its origin. Without one (not a page): refused by media type.
    for (const [origin, status, code] of [
      [{ origin: evil }, 403, "CROSS_SITE_REQUEST"],
      [{}, 415, "UNSUPPORTED_MEDIA_TYPE"],
    ] as const) {
      for (const response of await posts(origin)) {
        expect(response.status).toBe(status);
        expect(response.headers.get("access-control-allow-origin")).toBeNull();
        expect(await codeOf(response)).toBe(code);
      }
    }
    // A mutation over GET (what an <img> or a link sends) is refused by method, and from another site by its origin first.
    expect((await fetch(`${url}?query=${encodeURIComponent(mutation)}`, { headers: { origin: evil } })).status).toBe(403);
    expect((await fetch(`${url}?query=${encodeURIComponent(mutation)}`, { headers: { accept: "application/json" } })).status).toBe(405);
    // Only the control's workspace exists.
    expect(await t.app.db.prisma.workspace.count()).toBe(1);
  });

  it("refuses another site's GET and SSE subscription with 403 before anything runs, so the developer's own page still subscribes", async () => {
    t = await startTestApp("pglite", { listen: true, maxSubscriptionsPerKey: 3 });
    const url = t.server!.url;
    const own = new URL(url).origin;
    const { run } = await admit(t.client, { question: "Hi?" });
    const subscription = `${url}?query=${encodeURIComponent(`subscription { runEvents(runId: "${run.id}") { status } }`)}`;
    const streams: AbortController[] = [];
    const subscribe = async (headers: Record<string, string>) => {
      const stop = new AbortController();
      streams.push(stop);
      const response = await fetch(subscription, { headers: { accept: "text/event-stream", ...headers }, signal: stop.signal });
      const first = response.status === 200 ? new TextDecoder().decode((await response.body!.getReader().read()).value) : await response.text();
      return { status: response.status, first };
    };
    try {
      // An EventSource on another site's page sends its Origin; an <img> or a frame sends only Sec-Fetch-Site.
      const foreign: Record<string, string>[] = [
        { origin: evil },
        { origin: evil, "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors" },
        { "sec-fetch-site": "cross-site" },
      ];
      for (const headers of [...foreign, ...foreign]) {
        const refused = await subscribe(headers);
        expect(refused.status).toBe(403);
        expect(JSON.parse(refused.first).errors[0].extensions.code).toBe("CROSS_SITE_REQUEST");
      }
      const read = await fetch(`${url}?query=${encodeURIComponent("{ runs(first: 1) { edges { node { id } } } }")}`, { headers: { origin: evil } });
      expect(read.status).toBe(403);
      // The key's whole share is still the developer's: their own page's subscriptions open (and a client without Origin's).
      const mine: Record<string, string>[] = [{ origin: own, "sec-fetch-site": "same-origin" }, { "sec-fetch-site": "same-origin" }, {}];
      for (const headers of mine) {
        const opened = await subscribe(headers);
        expect(opened.status).toBe(200);
        expect(opened.first).not.toContain("SUBSCRIPTION_LIMIT");
      }
      // A link the user follows to GraphiQL from another site still opens it (fetch would send its own Sec-Fetch-Mode).
      const link = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
        const headers = { accept: "text/html", "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" };
        get(url, { headers }, (response) => {
          let body = "";
          response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
          response.on("end", () => resolve({ status: response.statusCode, body }));
        }).on("error", reject);
      });
      expect(link.status).toBe(200);
      expect(link.body).toContain("GraphiQL");
    } finally {
      for (const stream of streams) stream.abort();
    }
  });

  it("runs a GET without Origin, Sec-Fetch-Site or a key only when it names a GraphQL answer or sends a client's header", async () => {
    t = await startTestApp("pglite", { listen: true, allowedHosts: ["dossier.lan"], maxSubscriptionsPerKey: 2 });
    const { run } = await admit(t.client, { question: "Hi?" });
    const key = await t.createPrincipal("backend");
    const at = (query: string) => `/graphql?query=${encodeURIComponent(query)}`;
    const subscription = at(`subscription { runEvents(runId: "${run.id}") { status } }`);
    // What plain http under a name that is not loopback's brings from another site's <img>, frame or <link>: no Origin, no Sec-Fetch-*.
    const send = (path: string, headers: Record<string, string>) =>
      new Promise<{ status?: number; body: string }>((resolve, reject) => {
        const sent = get({ host: "127.0.0.1", port: t!.server!.port, path, headers: { host: `dossier.lan:${t!.server!.port}`, ...headers } }, (response) => {
          let body = "";
          response.setEncoding("utf8").on("data", (chunk: string) => {
            body += chunk;
            // A stream's first event is enough.
            if (response.headers["content-type"]?.startsWith("text/event-stream")) sent.destroy();
          });
          response.on("close", () => resolve({ status: response.statusCode, body }));
        });
        sent.on("error", reject);
      });
    const listening = t.listeners();
    const frame = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
    for (const accept of ["image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", "text/css,*/*;q=0.1", "*/*", ""]) {
      for (const path of [at("{ viewer { id } }"), subscription]) {
        const refused = await send(path, { accept });
        expect(refused.status).toBe(403);
        expect(JSON.parse(refused.body).errors[0]).toEqual({ message: BARE_GET_MESSAGE, extensions: { code: "CROSS_SITE_REQUEST" } });
      }
    }
    // A frame, or a link followed, gets GraphiQL's page, which runs nothing by itself (without GraphiQL: 403, cross-site-browser.test.ts).
    for (const path of ["/graphql", at("{ viewer { id } }"), subscription]) expect((await send(path, { accept: frame })).body).toContain("GraphiQL");
    expect(t.listeners()).toBe(listening);
    // A GraphQL client says what it takes, or sends a header no page's element can; a key is a client's too.
    const clients: Record<string, string>[] = [
      { accept: "application/graphql-response+json,application/json;q=0.9" },
      { accept: "application/json" },
      { accept: "*/*", "apollo-require-preflight": "true" },
      { accept: "*/*", "x-apollo-operation-name": "Viewer" },
      { accept: "*/*", authorization: `Bearer ${key}` },
    ];
    for (const headers of clients) {
      const served = await send(at("{ viewer { name } }"), headers);
      expect([served.status, JSON.parse(served.body).data?.viewer?.name]).toEqual([200, headers.authorization ? "backend" : expect.any(String)]);
    }
    // The development principal's subscriptions are all its own page's (an EventSource names the stream).
    for (let i = 0; i < 2; i += 1) {
      const stream = await send(subscription, { accept: "text/event-stream" });
      expect(stream.status).toBe(200);
      expect(stream.body).not.toContain("SUBSCRIPTION_LIMIT");
    }
  });

  it("approves no foreign origin: a preflight gets no Access-Control-Allow-Origin, and a read's answer carries none", async () => {
    t = await startTestApp("pglite", { listen: true });
    const url = t.server!.url;
    const preflight = await fetch(url, {
      method: "OPTIONS",
      headers: { origin: evil, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const read = await fetch(url, {
      method: "POST",
      headers: { origin: evil, "content-type": "application/json" },
      body: JSON.stringify({ query: "{ workspaces(first: 1) { edges { node { id } } } }" }),
    });
    expect(read.headers.get("access-control-allow-origin")).toBeNull();
    expect(read.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("refuses a WebSocket from a foreign origin, and accepts its own origin and clients that send none", async () => {
    t = await startTestApp("pglite", { listen: true });
    const wsUrl = t.server!.wsUrl;
    const open = (origin?: string) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(wsUrl, "graphql-transport-ws", origin ? { origin } : {});
        socket.once("open", () => {
          socket.close();
          resolve(101);
        });
        socket.once("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
        socket.once("error", () => resolve(-1));
      });
    expect(await open(evil)).toBe(401);
    expect(await open(new URL(t.server!.url).origin)).toBe(101);
    expect(await open()).toBe(101);
  });

  it("approves the origins CORS_ORIGINS lists, over HTTP and WebSocket", async () => {
    const app = "https://app.example.com";
    const { corsOrigins } = loadConfig({ CORS_ORIGINS: `${app}, http://localhost:5173` });
    expect(corsOrigins).toEqual([app, "http://localhost:5173"]);
    expect(() => loadConfig({ CORS_ORIGINS: "https://app.example.com/path" })).toThrow(/CORS_ORIGINS/);
    t = await startTestApp("pglite", { listen: true, corsOrigins });
    const preflight = await fetch(t.server!.url, { method: "OPTIONS", headers: { origin: app, "access-control-request-method": "POST" } });
    expect(preflight.headers.get("access-control-allow-origin")).toBe(app);
    const other = await fetch(t.server!.url, { method: "OPTIONS", headers: { origin: evil, "access-control-request-method": "POST" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const opened = await new Promise<boolean>((resolve) => {
      const socket = new WebSocket(t!.server!.wsUrl, "graphql-transport-ws", { origin: app });
      socket.once("open", () => (socket.close(), resolve(true)));
      socket.once("unexpected-response", () => resolve(false));
    });
    expect(opened).toBe(true);
  });
});

describe("a page's origin as this server's own", () => {
  const upgrade = (origin: string, host: string) => upgradeAllowed({ headers: { origin, host } } as IncomingMessage, [], undefined);

  it("is the Host's name and port; a Host without a port takes any port of its name, but a loopback name only its scheme's default", () => {
    expect(upgrade("http://localhost:4000", "localhost:4000")).toBe(true);
    expect(upgrade("http://localhost", "localhost")).toBe(true);
    expect(upgrade("http://localhost", "localhost:80")).toBe(true);
    expect(upgrade("https://dossier.example", "dossier.example")).toBe(true);
    expect(upgrade("http://[::1]:4000", "[::1]:4000")).toBe(true);
    // A server on port 80 (a Host without a port): a page on another port of that name is not its own.
    expect(upgrade("http://localhost:8080", "localhost")).toBe(false);
    expect(upgrade("https://dossier.example", "dossier.example:80")).toBe(false);
    expect(upgrade("http://localhost:4001", "localhost:4000")).toBe(false);
    expect(upgrade("http://127.0.0.1:8080", "127.0.0.1")).toBe(false);
    // Behind a reverse proxy that sends `Host $host` (no port): the page's own port is not known, any is taken.
    expect(upgrade("https://dossier.example:8443", "dossier.example")).toBe(true);
    expect(upgrade("http://evil.example", "localhost:4000")).toBe(false);
  });
});
