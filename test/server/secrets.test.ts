// Secrets at rest: MCP header and environment values are stored sealed (AES-256-GCM) and opened
// only to connect; GraphQL never returns them; a server without a key refuses to store any; the
// embedded default keeps its key in a file only its owner can read.
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { openSecrets } from "../../src/compose/infrastructure.js";
import { loadConfig } from "../../src/config.js";
import { SecretBox, newSecretsKey } from "../../src/domain/secret-box.js";
import { silentLogger } from "../../src/logger.js";
import type { McpEndpoint } from "../../src/runtime/ports/mcp.js";
import { backends } from "../support/databases.js";
import { expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

const token = "sk-live-4f3c2b1a0987654321";

describe.each(backends)("MCP secrets at rest on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("stores header and environment values sealed, returns only their names, and opens them to connect", async () => {
    const seen: McpEndpoint[] = [];
    t = await startTestApp(backend, {
      mcp: {
        stdioCommands: ["/usr/local/bin/mcp-files"],
        stdioEnv: ["API_TOKEN"],
        connector: async (endpoint) => {
          seen.push(endpoint);
          throw new Error("not reachable in this test");
        },
      },
    });
    const http = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "remote", transport: "HTTP", url: "https://mcp.example.com/mcp", headers: [{ name: "Authorization", value: `Bearer ${token}` }] },
    });
    expectType(http.upsertMcpServer, "UpsertMcpServerSuccess");
    await t.client.request(UpsertMcpServerDocument, {
      input: { name: "files", transport: "STDIO", command: "/usr/local/bin/mcp-files", env: [{ name: "API_TOKEN", value: token }], enabled: false },
    });

    // Nowhere in the database in clear text.
    const rows = await t.app.db.prisma.$queryRawUnsafe<{ dump: string }[]>("SELECT row_to_json(m)::text AS dump FROM mcp_server m");
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.dump).not.toContain(token);
    expect(rows.map((row) => row.dump).join()).toMatch(/"value": ?"v1\./);
    // Never through GraphQL.
    const listed = await t.client.request(McpServersDocument);
    expect(JSON.stringify(listed)).not.toContain(token);
    // Opened for the connection.
    await waitFor(() => seen.length > 0, 10_000);
    expect(seen[0]).toMatchObject({ transport: "HTTP", headers: { Authorization: `Bearer ${token}` } });
  });

  it("refuses secret values where there is no key, and still stores servers without any", async () => {
    t = await startTestApp(backend, { mcp: { secrets: undefined } });
    const refused = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "remote", transport: "HTTP", url: "https://mcp.example.com/", headers: [{ name: "Authorization", value: `Bearer ${token}` }] },
    });
    expect(expectType(refused.upsertMcpServer, "ValidationError").issues).toEqual([{ field: "headers", message: expect.stringContaining("SECRETS_KEY") }]);
    expect(await t.app.db.prisma.mcpServer.count()).toBe(0);
    const plain = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "open", transport: "HTTP", url: "https://mcp.example.com/", enabled: false },
    });
    expectType(plain.upsertMcpServer, "UpsertMcpServerSuccess");
  });
});

describe("secrets keys", () => {
  it("seals with a fresh IV each time and refuses a value altered at rest", () => {
    const box = new SecretBox(Buffer.from(newSecretsKey(), "base64"));
    const once = box.seal(token);
    expect(box.seal(token)).not.toBe(once);
    expect(box.open(once)).toBe(token);
    const [iv, tag, ciphertext] = once.slice(3).split(".");
    const altered = Buffer.from(ciphertext!, "base64url");
    altered[0]! ^= 1;
    expect(() => box.open(`v1.${iv}.${tag}.${altered.toString("base64url")}`)).toThrow();
    expect(() => new SecretBox(Buffer.from(newSecretsKey(), "base64")).open(once)).toThrow();
  });

  it("keeps the embedded default's key in a file only its owner can read, the same across starts; PostgreSQL needs SECRETS_KEY", () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-secrets-"));
    const first = openSecrets(loadConfig({ DATA_DIR: dataDir }), silentLogger)!;
    const file = path.join(dataDir, "secrets.key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = openSecrets(loadConfig({ DATA_DIR: dataDir }), silentLogger)!;
    expect(second.open(first.seal(token))).toBe(token);
    expect(openSecrets(loadConfig({ DATABASE_URL: "postgresql://db/x" }), silentLogger)).toBeUndefined();
    const key = newSecretsKey();
    const configured = openSecrets(loadConfig({ DATABASE_URL: "postgresql://db/x", SECRETS_KEY: key }), silentLogger)!;
    expect(new SecretBox(Buffer.from(key, "base64")).open(configured.seal(token))).toBe(token);
    expect(() => loadConfig({ SECRETS_KEY: "too-short" })).toThrow(/SECRETS_KEY/);
  });
});
