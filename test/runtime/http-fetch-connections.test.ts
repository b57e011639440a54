// http_fetch's sockets: every run of a process shares one client, which keeps at most
// FETCH_CONNECTIONS_PER_ORIGIN sockets open to an origin and closes an idle one within
// FETCH_KEEP_ALIVE_MAX_MS even when the host asks to keep it for ten minutes — so runs (one
// principal's many, say) cannot pile up open sockets until the process runs out of descriptors.
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { createHttpFetchClient, createHttpFetchTool, FETCH_CONNECTIONS_PER_ORIGIN } from "../../src/runtime/tools/http-fetch.js";
import { admit } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { toolContext } from "../support/tool-context.js";

/** A host that asks clients to keep its sockets for 600 s, answering each request after `delayMs`; counts its sockets. */
let site: { server: Server; host: string; opened: number; open: Set<Socket>; mostOpen: number };
let t: TestApp | undefined;

beforeEach(async () => {
  const server = createServer((_req, res) => {
    setTimeout(() => res.writeHead(200, { "content-type": "text/plain", "keep-alive": "timeout=600" }).end("capacity 42"), 100);
  });
  server.keepAliveTimeout = 700_000;
  const open = new Set<Socket>();
  site = { server, host: "", opened: 0, open, mostOpen: 0 };
  server.on("connection", (socket: Socket) => {
    site.opened += 1;
    open.add(socket);
    site.mostOpen = Math.max(site.mostOpen, open.size);
    socket.on("close", () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  site.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await t?.close();
  t = undefined;
  site.server.closeAllConnections();
  await new Promise<void>((resolve) => site.server.close(() => resolve()));
});

const allClosed = () => vi.waitFor(() => expect(site.open.size).toBe(0), { timeout: 20_000, interval: 250 });

it("runs share one client: never more sockets than its cap, none left open soon after, though the host asks for 600 s", async () => {
  const runs = FETCH_CONNECTIONS_PER_ORIGIN + 4;
  t = await startTestApp("pglite", {
    runtime: {
      model: toolCallingModel("fetcher"),
      sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-fetch-")),
      fetch: { allowedHosts: [site.host], maxBytes: 1_000, timeoutMs: 15_000 },
      concurrency: runs,
      maxRunningPerPrincipal: runs,
      toolTimeoutMs: 20_000,
    },
  });
  const question = callTools({ name: "http_fetch", arguments: { url: `http://${site.host}/` } });
  const admitted = await Promise.all(Array.from({ length: runs }, () => admit(t!.client, { question })));
  for (const { run } of admitted) {
    const done = await settled(t.client, run.id, 60_000);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toContain("capacity 42");
  }
  expect(site.opened).toBeGreaterThan(0);
  expect(site.opened).toBeLessThanOrEqual(FETCH_CONNECTIONS_PER_ORIGIN);
  await allClosed();
}, 90_000);

it("calls at once through one client wait for a socket beyond the cap, and all of them are answered", async () => {
  const settings = { allowedHosts: [site.host], maxBytes: 1_000, timeoutMs: 15_000 };
  const client = createHttpFetchClient(settings);
  try {
    const calls = Array.from({ length: FETCH_CONNECTIONS_PER_ORIGIN * 3 }, () =>
      createHttpFetchTool({ ...settings, client }).execute({ url: `http://${site.host}/` }, toolContext()),
    );
    const answers = await Promise.all(calls);
    expect(answers.filter((answer) => answer.includes("capacity 42"))).toHaveLength(FETCH_CONNECTIONS_PER_ORIGIN * 3);
    expect(site.mostOpen).toBeLessThanOrEqual(FETCH_CONNECTIONS_PER_ORIGIN);
    expect(site.opened).toBeLessThanOrEqual(FETCH_CONNECTIONS_PER_ORIGIN);
    await allClosed();
  } finally {
    await client.close();
  }
}, 60_000);
