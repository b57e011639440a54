// Credentials in URLs (issue 35, point 7): webhook and MCP server URLs are stored sealed, shown to
// their owner redacted (scheme, host and port kept), and opened only to connect — a real receiver
// gets its secret path and query, a real MCP server over HTTP connects only at its secret URL.
// Without SECRETS_KEY, a URL with something to hide is refused as header values are; URLs stored
// in clear before sealing existed are read as they are and sealed at the next start.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ArchiveWorkspaceDocument, CreateWebhookDocument, McpServersDocument, UpsertMcpServerDocument, WebhooksDocument } from "../../sdk/generated/graphql.js";
import { redactUrl, redactUrlsIn, sealStoredUrls } from "../../src/domain/sealed-url.js";
import { SecretBox } from "../../src/domain/secret-box.js";
import { randomBytes } from "node:crypto";
import { createLogger } from "../../src/logger.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

const PATH_SECRET = "T0Kp4thS3cr3t";
const QUERY_SECRET = "qS3cr3tV4lue";

describe("the redaction rule", () => {
  it.each([
    ["https://hooks.example/services/T0/B1/xyz", "https://hooks.example/…/***"],
    ["https://u:p@hooks.example:8443/a?token=abc&x=1#frag", "https://***@hooks.example:8443/…/***?token=***&x=***"],
    ["https://mcp.example.com/", "https://mcp.example.com/"],
    ["http://127.0.0.1:9000?key=k", "http://127.0.0.1:9000/?key=***"],
  ])("shows %s as %s", (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it("redacts every URL in a text, as a failure's message repeats it", () => {
    expect(redactUrlsIn("cannot be constructed from a URL that includes credentials: http://alice:pw@mcp.test:81/mcp?token=t, then https://h/x.")).toBe(
      "cannot be constructed from a URL that includes credentials: http://***@mcp.test:81/…/***?token=***, then https://h/…/***.",
    );
  });
});

/** An MCP server over streamable HTTP that answers only at one path with one query value. */
async function secretMcpServer(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const http: Server = createServer(async (req, res) => {
    seen.push(req.url ?? "");
    if (req.url !== `/mcp/${PATH_SECRET}?token=${QUERY_SECRET}`) return void res.writeHead(403).end("forbidden");
    const server = new McpServer({ name: "secret-url", version: "1.0.0" });
    server.registerTool("ping", { description: "Answers pong." }, async () => ({ content: [{ type: "text", text: "pong" }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close());
    await server.connect(transport);
    let body = "";
    for await (const chunk of req) body += chunk;
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp/${PATH_SECRET}?token=${QUERY_SECRET}`, seen, close: () => new Promise((resolve) => http.close(() => resolve())) };
}

describe.each(backends)("URLs with credentials on %s", (backend) => {
  let t: TestApp | undefined;
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    for (const close of closers.splice(0)) await close();
  });

  const dump = async (table: "webhook" | "mcp_server") =>
    (await t!.app.db.prisma.$queryRawUnsafe<{ dump: string }[]>(`SELECT row_to_json(r)::text AS dump FROM ${table} r`)).map((row) => row.dump).join("\n");

  async function receiver(): Promise<Receiver> {
    const started = await startReceiver();
    closers.push(() => started.close());
    return started;
  }

  it("stores a webhook URL sealed, shows it redacted, and delivers to its real path and query", async () => {
    const hooks = await receiver();
    t = await startTestApp(backend, { webhooks: { deliver: true, allowedHosts: [hooks.host], retryDelaysSeconds: [0.2], pollMs: 100 } });
    const url = `http://${hooks.host}/hooks/${PATH_SECRET}?token=${QUERY_SECRET}`;
    const created = expectType(
      (await t.client.request(CreateWebhookDocument, { input: { url, events: ["WORKSPACE_ARCHIVED"] } })).createWebhook,
      "CreateWebhookSuccess",
    );

    const shown = `http://${hooks.host}/…/***?token=***`;
    expect(created.webhook.url).toBe(shown);
    expect((await t.client.request(WebhooksDocument)).webhooks.edges.map(({ node }) => node.url)).toEqual([shown]);
    const row = await dump("webhook");
    expect(row).toContain('"url":"v1.');
    expect(row).not.toContain(PATH_SECRET);
    expect(row).not.toContain(QUERY_SECRET);
    expect(row).not.toContain("/hooks/");

    const workspace = await createWorkspace(t.client);
    expectType((await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
    await vi.waitFor(() => expect(hooks.received).toHaveLength(1), { timeout: 10_000 });
    expect(hooks.received[0]!.url).toBe(`/hooks/${PATH_SECRET}?token=${QUERY_SECRET}`);
  });

  it("stores an MCP server URL sealed, shows it redacted, and connects over HTTP at the real URL", async () => {
    const mcp = await secretMcpServer();
    closers.push(mcp.close);
    t = await startTestApp(backend, { mcp: { httpAllowedHosts: ["127.0.0.1"] } });
    const upserted = await t.client.request(UpsertMcpServerDocument, { input: { name: "secret", transport: "HTTP", url: mcp.url } });
    const port = new URL(mcp.url).port;
    expect(expectType(upserted.upsertMcpServer, "UpsertMcpServerSuccess").mcpServer.url).toBe(`http://127.0.0.1:${port}/…/***?token=***`);
    const row = await dump("mcp_server");
    expect(row).not.toContain(PATH_SECRET);
    expect(row).not.toContain(QUERY_SECRET);

    await vi.waitFor(
      async () => {
        const server = (await t!.client.request(McpServersDocument)).mcpServers.edges[0]?.node;
        expect(server).toMatchObject({ url: `http://127.0.0.1:${port}/…/***?token=***`, status: { state: "CONNECTED", tools: [{ name: "ping" }] } });
      },
      { timeout: 10_000 },
    );
    expect(mcp.seen.every((seen) => seen === `/mcp/${PATH_SECRET}?token=${QUERY_SECRET}`)).toBe(true);
  });

  it("without SECRETS_KEY refuses a URL with something to hide, as header values are refused, and stores one without", async () => {
    t = await startTestApp(backend, { mcp: { secrets: undefined } });
    const refused = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "remote", transport: "HTTP", url: `https://mcp.example.com/${PATH_SECRET}` },
    });
    expect(expectType(refused.upsertMcpServer, "ValidationError").issues).toEqual([{ field: "url", message: expect.stringContaining("SECRETS_KEY") }]);
    const plain = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "open", transport: "HTTP", url: "https://mcp.example.com/", enabled: false },
    });
    expect(expectType(plain.upsertMcpServer, "UpsertMcpServerSuccess").mcpServer.url).toBe("https://mcp.example.com/");
    expect(await dump("mcp_server")).toContain('"url":"https://mcp.example.com/"');
  });

  it("refuses an MCP server URL with user:pass@, as webhooks do: it would never connect and its password would be logged", async () => {
    t = await startTestApp(backend, { mcp: { httpAllowedHosts: ["127.0.0.1"] } });
    const refused = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "basic", transport: "HTTP", url: `http://alice:${PATH_SECRET}@127.0.0.1:9/mcp` },
    });
    expect(expectType(refused.upsertMcpServer, "ValidationError").issues).toEqual([
      { field: "url", message: "must not carry a user name or password (user:pass@): send credentials as a header (e.g. Authorization) instead" },
    ]);
    expect(await dump("mcp_server")).toBe("");
  });

  it("logs a failed connection of a URL stored before user:pass@ was refused without any of its secrets", async () => {
    const lines: string[] = [];
    t = await startTestApp(backend, { mcp: { httpAllowedHosts: ["127.0.0.1"] }, logger: createLogger("debug", (line) => void lines.push(line)) });
    const { principalId } = await t.app.services.principals.ensureDevelopmentPrincipal();
    const url = `http://alice:${PATH_SECRET}@127.0.0.1:9/mcp/path?token=${QUERY_SECRET}`;
    await t.app.db.prisma.mcpServer.create({ data: { ownerId: principalId, name: "legacy", transport: "HTTP", url } });
    await vi.waitFor(async () => expect((await t!.client.request(McpServersDocument)).mcpServers.edges[0]?.node.status.state).toBe("FAILED"), {
      timeout: 10_000,
    });
    const failures = lines.filter((line) => line.includes("mcp server unavailable"));
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.join("\n")).toContain("http://***@127.0.0.1:9/…/***?token=***");
    expect(lines.filter((line) => line.includes(PATH_SECRET) || line.includes(QUERY_SECRET) || line.includes("/mcp/path"))).toEqual([]);
  });

  it("reads a URL stored in clear before sealing existed, and seals it at the next start", async () => {
    const mcp = await secretMcpServer();
    closers.push(mcp.close);
    const secrets = new SecretBox(randomBytes(32));
    t = await startTestApp(backend, { mcp: { httpAllowedHosts: ["127.0.0.1"], secrets } });
    const { principalId } = await t.app.services.principals.ensureDevelopmentPrincipal();
    // As an older version stored it.
    await t.app.db.prisma.mcpServer.create({ data: { ownerId: principalId, name: "legacy", transport: "HTTP", url: mcp.url } });
    const port = new URL(mcp.url).port;
    await vi.waitFor(
      async () => {
        const server = (await t!.client.request(McpServersDocument)).mcpServers.edges[0]?.node;
        expect(server).toMatchObject({ url: `http://127.0.0.1:${port}/…/***?token=***`, status: { state: "CONNECTED" } });
      },
      { timeout: 10_000 },
    );
    expect(await sealStoredUrls(t.app.db.prisma, secrets)).toBe(1);
    expect(await sealStoredUrls(t.app.db.prisma, secrets)).toBe(0);
    const row = await dump("mcp_server");
    expect(row).not.toContain(QUERY_SECRET);
    expect(secrets.open((await t.app.db.prisma.mcpServer.findFirstOrThrow()).url!)).toBe(mcp.url);
  });
});
