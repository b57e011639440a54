// Attack: a principal aims Dossier's outbound requests (http_fetch, an HTTP MCP server) at a
// service inside the network. An "internal" server on 127.0.0.1 holds a secret and counts every
// request it receives; it must receive none — not by address, not by a name resolving to it,
// not through a redirect — unless the operator named its host. A name that resolves inward and one
// that does not resolve are refused in the same words, so that refusals map no internal names.
import { lookup } from "node:dns/promises";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpServersDocument, type UpsertMcpServerInput, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import type { Logger } from "../../src/logger.js";
import { createHttpFetchClient, createHttpFetchTool } from "../../src/runtime/tools/http-fetch.js";
import { admit, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { toolContext } from "../support/tool-context.js";
import { waitUntil } from "../support/wait.js";

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

describe("outbound requests never reach the internal network", () => {
  let internalRequests: string[] = [];
  const internal = createServer((request, response) => {
    internalRequests.push(`${request.method} ${request.url}`);
    response.writeHead(200, { "content-type": "text/plain" }).end("db_password=hunter2");
  });
  // An allowed server that redirects inward: to an address, to a name, to localhost.
  const redirector = createServer((request, response) => {
    const target = {
      "/to-address": `http://127.0.0.1:${internalPort}/`,
      "/to-name": `http://db.rebind.test:${internalPort}/`,
      "/to-localhost": `http://localhost:${internalPort}/`,
    }[request.url ?? ""];
    response.writeHead(target ? 307 : 404, target ? { location: target } : {}).end();
  });
  let internalPort = 0;
  let redirectorPort = 0;
  const resolved: string[] = [];
  /** The refusal of a name that leads nowhere outside the network, as its caller reads it. */
  const unreachable = (host: string, setting: string) =>
    `${host} does not resolve to an address this server may reach; only hosts an operator lists in ${setting} may be reached inside its network`;
  // `*.rebind.test` names resolve to 127.0.0.1, as a hostile name server would answer; `*.missing.test`
  // names to nothing, as the system resolver fails a name it does not know; other names as the system resolves them.
  const resolve = async (host: string) => {
    resolved.push(host);
    if (host.endsWith(".missing.test")) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND", hostname: host });
    return host.endsWith(".rebind.test") ? ["127.0.0.1"] : (await lookup(host, { all: true })).map((entry) => entry.address);
  };

  beforeAll(async () => {
    internalPort = await listen(internal);
    redirectorPort = await listen(redirector);
  });
  afterAll(async () => {
    await new Promise((done) => internal.close(done));
    await new Promise((done) => redirector.close(done));
  });
  afterEach(() => {
    internalRequests = [];
    resolved.length = 0;
  });

  describe("http_fetch", () => {
    const fetchTool = (allowedHosts: string[]) => createHttpFetchTool({ allowedHosts, maxBytes: 10_000, timeoutMs: 5_000, resolve });
    const fetchUrl = (tool: ReturnType<typeof fetchTool>, url: string) => tool.execute({ url }, toolContext());

    it("refuses a wildcard-allowed name that resolves to 127.0.0.1, resolving it once", async () => {
      const tool = fetchTool(["*.rebind.test"]);
      await expect(fetchUrl(tool, `http://db.rebind.test:${internalPort}/`)).rejects.toThrow(
        `fetching http://db.rebind.test:${internalPort}/ was refused: ${unreachable("db.rebind.test", "FETCH_ALLOWED_HOSTS")}`,
      );
      expect(resolved).toEqual(["db.rebind.test"]);
      expect(internalRequests).toEqual([]);
    });

    it("refuses a name that resolves inward and one that does not resolve in the same words, and logs which it was", async () => {
      const logged: Record<string, unknown>[] = [];
      const keep = (message: string, fields?: Record<string, unknown>) => void logged.push({ message, ...fields });
      const logger: Logger = { debug: () => undefined, info: () => undefined, warn: keep, error: keep };
      const allowedHosts = ["*.rebind.test", "*.missing.test"];
      const client = createHttpFetchClient({ allowedHosts, resolve }, logger);
      const tool = createHttpFetchTool({ allowedHosts, maxBytes: 10_000, timeoutMs: 5_000, resolve, client });
      const refusal = async (host: string) => String(await fetchUrl(tool, `http://${host}:${internalPort}/`).catch((error: Error) => error.message));
      const [inward, nowhere] = [await refusal("db.rebind.test"), await refusal("db.missing.test")];
      expect(nowhere.replaceAll("db.missing.test", "db.rebind.test")).toBe(inward);
      expect(nowhere).toBe(`fetching http://db.missing.test:${internalPort}/ was refused: ${unreachable("db.missing.test", "FETCH_ALLOWED_HOSTS")}`);
      expect(logged).toEqual([
        {
          message: "outbound connection refused",
          host: "db.rebind.test",
          setting: "FETCH_ALLOWED_HOSTS",
          reason: "it resolves to an address inside the network",
          addresses: ["127.0.0.1"],
        },
        { message: "outbound connection refused", host: "db.missing.test", setting: "FETCH_ALLOWED_HOSTS", reason: "it does not resolve", code: "ENOTFOUND" },
      ]);
      await client.close();
      expect(internalRequests).toEqual([]);
    });

    it("checks every redirect hop: against the allow-list, and its address when resolved", async () => {
      const tool = fetchTool([`127.0.0.1:${redirectorPort}`, "*.rebind.test"]);
      await expect(fetchUrl(tool, `http://127.0.0.1:${redirectorPort}/to-address`)).rejects.toThrow(/is not on this server's fetch allow-list/);
      await expect(fetchUrl(tool, `http://127.0.0.1:${redirectorPort}/to-name`)).rejects.toThrow(unreachable("db.rebind.test", "FETCH_ALLOWED_HOSTS"));
      expect(internalRequests).toEqual([]);
    });

    it("reaches a host the operator named exactly, connecting to the address it resolved", async () => {
      // intranet.rebind.test exists only in this resolver: the request arriving proves the socket used its answer.
      const tool = fetchTool([`intranet.rebind.test:${internalPort}`]);
      expect(await fetchUrl(tool, `http://intranet.rebind.test:${internalPort}/report`)).toContain("db_password=hunter2");
      expect(internalRequests).toEqual(["GET /report"]);
    });

    it("reports a failed connection by its kind only", async () => {
      const closed = createServer();
      const closedPort = await listen(closed);
      await new Promise((done) => closed.close(done));
      const tool = fetchTool([`127.0.0.1:${closedPort}`]);
      await expect(fetchUrl(tool, `http://127.0.0.1:${closedPort}/`)).rejects.toThrow(
        `fetching http://127.0.0.1:${closedPort}/ failed: the connection failed (ECONNREFUSED)`,
      );
    });
  });

  describe("HTTP MCP servers", () => {
    let t: TestApp | undefined;
    const processes: Spawned[] = [];
    afterEach(async () => {
      await t?.close();
      t = undefined;
      await killAll(processes);
    });

    async function start(httpAllowedHosts: string[] = []) {
      const model = toolCallingModel();
      t = await startTestApp("pglite", {
        mcp: { httpAllowedHosts, resolve },
        runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) },
      });
      // Principal B, as in the reported attack.
      return t.as(await t.createPrincipal("B"));
    }

    type Client = Awaited<ReturnType<typeof start>>;
    const upsert = async (client: Client, input: UpsertMcpServerInput) => (await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer;
    const status = async (client: Client, name: string) =>
      (await client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node).find((server) => server.name === name)!.status;

    it("refuses an internal address as the URL, naming the setting", async () => {
      const b = await start();
      for (const host of [
        `127.0.0.1:${internalPort}`,
        `[::ffff:127.0.0.1]:${internalPort}`,
        `0.0.0.0:${internalPort}`,
        "169.254.169.254",
        "[::1]",
        "10.0.0.8:8080",
      ]) {
        const refused = expectType(await upsert(b, { name: "probe", transport: "HTTP", url: `http://${host}/mcp` }), "ValidationError");
        expect(refused.issues).toEqual([
          { field: "url", message: expect.stringContaining("only hosts an operator lists in MCP_HTTP_ALLOWED_HOSTS may be reached there") },
        ]);
      }
      expect((await b.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node)).toEqual([]);
      expect(internalRequests).toEqual([]);
    });

    it("never connects to a name that resolves inward, nor follows a redirect inward, and the run gets no tool from it", async () => {
      const b = await start([`127.0.0.1:${redirectorPort}`]);
      const probes = {
        localhost: `http://localhost:${internalPort}/mcp`,
        rebind: `http://db.rebind.test:${internalPort}/mcp`,
        missing: `http://db.missing.test:${internalPort}/mcp`,
        redirect: `http://127.0.0.1:${redirectorPort}/to-localhost`,
        "redirect-name": `http://127.0.0.1:${redirectorPort}/to-name`,
      };
      for (const [name, url] of Object.entries(probes)) expectType(await upsert(b, { name, transport: "HTTP", url }), "UpsertMcpServerSuccess");
      // An address stored while an operator allowed it, who has narrowed MCP_HTTP_ALLOWED_HOSTS since.
      const owner = await t!.app.db.prisma.principal.findFirstOrThrow({ where: { name: "B" } });
      await t!.app.db.prisma.mcpServer.create({ data: { ownerId: owner.id, name: "stored", transport: "HTTP", url: `http://127.0.0.1:${internalPort}/mcp` } });
      t!.app.events.publish("mcp:changed", { principalId: owner.id, at: new Date().toISOString() });
      await waitUntil(
        async () =>
          (await b.request(McpServersDocument)).mcpServers.edges
            .map((edge) => edge.node)
            .some((server) => server.name === "stored" && server.status.state === "FAILED") || undefined,
      );
      expect((await status(b, "stored")).error).toBe(
        `127.0.0.1:${internalPort} is an address inside this server's network; only hosts an operator lists in MCP_HTTP_ALLOWED_HOSTS may be reached there`,
      );
      // Names, resolved or not, are refused in one set of words.
      expect((await status(b, "localhost")).error).toBe(unreachable("localhost", "MCP_HTTP_ALLOWED_HOSTS"));
      expect((await status(b, "rebind")).error).toBe(unreachable("db.rebind.test", "MCP_HTTP_ALLOWED_HOSTS"));
      expect((await status(b, "missing")).error).toBe(unreachable("db.missing.test", "MCP_HTTP_ALLOWED_HOSTS"));
      for (const name of [...Object.keys(probes), "stored"]) expect(await status(b, name)).toMatchObject({ state: "FAILED", tools: [] });

      const { run } = await admit(b, { question: callTools({ name: "mcp__localhost__read", arguments: {} }) });
      expect((await settled(b, run.id)).answer).toBe('Error: there is no tool named "mcp__localhost__read".');
      expect(internalRequests).toEqual([]);
    });

    it("connects to an internal MCP server on a host the operator lists", async () => {
      const server = spawnTs("test/support/mcp-test-server.ts", { args: ["--http", "--name", "intranet"] });
      processes.push(server);
      const port = new URL((await server.waitForOutput(/listening (\S+)/)).split(" ")[1]!).port;
      const b = await start([`localhost:${port}`]);
      expectType(await upsert(b, { name: "intranet", transport: "HTTP", url: `http://localhost:${port}/mcp` }), "UpsertMcpServerSuccess");
      expect(await status(b, "intranet")).toMatchObject({ state: "CONNECTED" });
      // Another port of the same host is not listed.
      expectType(await upsert(b, { name: "other", transport: "HTTP", url: `http://localhost:${internalPort}/mcp` }), "UpsertMcpServerSuccess");
      expect(await status(b, "other")).toMatchObject({ state: "FAILED", error: expect.stringContaining("MCP_HTTP_ALLOWED_HOSTS") });
      expect(internalRequests).toEqual([]);
    });
  });
});
