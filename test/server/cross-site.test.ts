// No cross-site requests: the exact requests a page on another origin can make without a
// preflight — form, multipart and text/plain posts, a mutation over GET, a WebSocket from a
// foreign origin — execute nothing and read nothing, on the embedded default (no key needed,
// stdio MCP allowed). Listed origins (CORS_ORIGINS) and non-browser clients keep working.
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { loadConfig } from "../../src/config.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { allowTimeFor } from "../support/wait.js";

const evil = "http://evil.example";

describe("cross-site requests", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const mcpServerCount = async () => await t!.app.db.prisma.mcpServer.count();

  it("refuses form, multipart and text/plain posts with 415 and executes nothing, not even the command a form asks for", async () => {
    // Even with the program allowed, a form cannot make the server start it.
    t = await startTestApp("pglite", { listen: true, mcp: { stdioCommands: ["/usr/bin/touch"] } });
    const marker = path.join(mkdtempSync(path.join(tmpdir(), "dossier-csrf-")), "touched");
    const mutation = `mutation { upsertMcpServer(input: { name: "x", transport: STDIO, command: "/usr/bin/touch", args: ["${marker}"] }) { __typename } }`;
    const url = t.server!.url;

    const form = await fetch(url, {
      method: "POST",
      headers: { origin: evil, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ query: mutation }),
    });
    const multipart = new FormData();
    multipart.set("query", mutation);
    const formData = await fetch(url, { method: "POST", headers: { origin: evil }, body: multipart });
    const text = await fetch(url, { method: "POST", headers: { origin: evil, "content-type": "text/plain" }, body: JSON.stringify({ query: mutation }) });
    for (const response of [form, formData, text]) {
      expect(response.status).toBe(415);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    }
    // A mutation over GET (what an <img> or a link sends) is refused by method.
    const get = await fetch(`${url}?query=${encodeURIComponent(mutation)}`, { headers: { origin: evil } });
    expect(get.status).toBe(405);

    expect(await mcpServerCount()).toBe(0);
    await allowTimeFor("a refused request to start an MCP server anyway", 300);
    expect(existsSync(marker)).toBe(false);
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
