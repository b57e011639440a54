// R13, R14 through GraphQL: skills and MCP server configurations per principal — create, read,
// update, delete, typed validation errors, and no principal seeing another's.
import { afterEach, describe, expect, it } from "vitest";
import {
  DeleteMcpServerDocument,
  DeleteSkillDocument,
  McpServersDocument,
  NodeDocument,
  SkillsDocument,
  UpsertMcpServerDocument,
  type McpTransport,
  type UpsertMcpServerInput,
  UpsertSkillDocument,
} from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("capabilities through GraphQL on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("manages skills per principal and agent, over the built-in ones", async () => {
    t = await startTestApp(backend, {
      agents: [
        { name: "analyst", systemPrompt: "You compare figures." },
        { name: "scout", systemPrompt: "You scout.", skills: ["source-*"] },
      ],
    });
    const builtIn = (await t.client.request(SkillsDocument)).skills;
    expect(builtIn.map((s) => [s.name, s.source])).toEqual([
      ["research-checkpoint", "BUILT_IN"],
      ["source-evaluation", "BUILT_IN"],
      ["spilled-results", "BUILT_IN"],
      ["stuck-payment", "BUILT_IN"],
    ]);

    const created = await t.client.request(UpsertSkillDocument, {
      input: { agent: "analyst", name: "ratio-check", description: "Check ratios twice.", body: "Divide, then multiply back." },
    });
    expect(expectType(created.upsertSkill, "UpsertSkillSuccess").skill).toMatchObject({
      name: "ratio-check",
      agent: "analyst",
      source: "DATABASE",
      overridesBuiltIn: false,
    });
    const updated = await t.client.request(UpsertSkillDocument, {
      input: { agent: "analyst", name: "ratio-check", description: "Check ratios twice.", body: "Version 2." },
    });
    expect(expectType(updated.upsertSkill, "UpsertSkillSuccess").skill.body).toBe("Version 2.");
    expect((await t.client.request(SkillsDocument, { agent: "analyst" })).skills.map((s) => s.name)).toContain("ratio-check");
    expect((await t.client.request(SkillsDocument, { agent: "researcher" })).skills.map((s) => s.name)).not.toContain("ratio-check");
    // A profile's skill list narrows what its runs can load.
    expect((await t.client.request(SkillsDocument, { agent: "scout" })).skills.map((s) => s.name)).toEqual(["source-evaluation"]);

    const other = t.as(await t.createPrincipal("Other"));
    expect((await other.request(SkillsDocument, { agent: "analyst" })).skills.map((s) => s.source)).not.toContain("DATABASE");
    const notTheirs = await other.request(DeleteSkillDocument, { input: { agent: "analyst", name: "ratio-check" } });
    expect(notTheirs.deleteSkill.__typename).toBe("NotFoundError");

    const deleted = await t.client.request(DeleteSkillDocument, { input: { agent: "analyst", name: "ratio-check" } });
    expect(expectType(deleted.deleteSkill, "DeleteSkillSuccess")).toMatchObject({ deletedName: "ratio-check", builtIn: null });
    expect((await t.client.request(SkillsDocument, { agent: "analyst" })).skills).toHaveLength(4);
  });

  it("refuses bad skills with typed errors naming each field", async () => {
    t = await startTestApp(backend);
    const bad = await t.client.request(UpsertSkillDocument, {
      input: { name: "Bad Name", description: "two\nlines", body: "  " },
    });
    expect(
      expectType(bad.upsertSkill, "ValidationError")
        .issues.map((i) => i.field)
        .sort(),
    ).toEqual(["body", "description", "name"]);
    const big = await t.client.request(UpsertSkillDocument, { input: { name: "big", description: "d", body: "x".repeat(64 * 1024 + 1) } });
    expect(expectType(big.upsertSkill, "ValidationError").issues[0]!.field).toBe("body");
    const noAgent = await t.client.request(UpsertSkillDocument, { input: { agent: "ghost", name: "a", description: "d", body: "b" } });
    expect(expectType(noAgent.upsertSkill, "ValidationError").issues).toEqual([{ field: "agent", message: 'there is no agent profile named "ghost"' }]);
  });

  it("manages MCP servers per principal, never returning secret values", async () => {
    t = await startTestApp(backend, { mcp: { stdioCommands: ["/usr/local/bin/mcp-files --root /data"], stdioEnv: ["API_TOKEN"] } });
    const created = await t.client.request(UpsertMcpServerDocument, {
      input: {
        name: "files",
        transport: "STDIO",
        command: "/usr/local/bin/mcp-files",
        args: ["--root", "/data"],
        env: [{ name: "API_TOKEN", value: "s3cret" }],
        enabled: false,
      },
    });
    const server = expectType(created.upsertMcpServer, "UpsertMcpServerSuccess").mcpServer;
    expect(server).toMatchObject({
      name: "files",
      transport: "STDIO",
      command: "/usr/local/bin/mcp-files",
      args: ["--root", "/data"],
      envNames: ["API_TOKEN"],
      enabled: false,
    });
    const listed = (await t.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node);
    expect(listed).toHaveLength(1);
    expect(listed[0]!.status).toMatchObject({ state: "DISABLED", tools: [], connects: 0 });
    expect(JSON.stringify(listed)).not.toContain("s3cret");
    expect((await t.client.request(NodeDocument, { id: server.id })).node).toMatchObject({ __typename: "McpServer" });

    const other = t.as(await t.createPrincipal("Other"));
    expect((await other.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node)).toEqual([]);
    expect((await other.request(NodeDocument, { id: server.id })).node).toBeNull();
    expect((await other.request(DeleteMcpServerDocument, { input: { name: "files" } })).deleteMcpServer.__typename).toBe("NotFoundError");

    const replaced = await t.client.request(UpsertMcpServerDocument, {
      input: { name: "files", transport: "HTTP", url: "https://mcp.example.com/mcp", headers: [{ name: "authorization", value: "Bearer x" }], enabled: false },
    });
    expect(expectType(replaced.upsertMcpServer, "UpsertMcpServerSuccess").mcpServer).toMatchObject({
      id: server.id,
      transport: "HTTP",
      command: null,
      args: [],
      envNames: [],
      headerNames: ["authorization"],
    });
    const deleted = await t.client.request(DeleteMcpServerDocument, { input: { name: "files" } });
    expect(expectType(deleted.deleteMcpServer, "DeleteMcpServerSuccess").deletedName).toBe("files");
    expect((await t.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node)).toEqual([]);
  });

  it("an upsert that leaves requireApproval out (a token rotated) keeps the server's hold; only false lifts it", async () => {
    t = await startTestApp(backend);
    const upsert = async (token: string, requireApproval?: boolean) => {
      const input = {
        name: "remote",
        transport: "HTTP" as const,
        url: "https://mcp.example.com/mcp",
        headers: [{ name: "authorization", value: token }],
        enabled: false,
      };
      const result = await t!.client.request(UpsertMcpServerDocument, { input: requireApproval === undefined ? input : { ...input, requireApproval } });
      return expectType(result.upsertMcpServer, "UpsertMcpServerSuccess").mcpServer.requireApproval;
    };
    const stored = async () => (await t!.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node.requireApproval);
    // A new server without it does not hold its calls.
    expect(await upsert("Bearer 1")).toBe(false);
    expect(await upsert("Bearer 2", true)).toBe(true);
    expect(await upsert("Bearer 3")).toBe(true);
    expect(await stored()).toEqual([true]);
    expect(await upsert("Bearer 4", false)).toBe(false);
    expect(await upsert("Bearer 5")).toBe(false);
    expect(await stored()).toEqual([false]);
  });

  it("refuses inconsistent MCP configurations with typed errors", async () => {
    t = await startTestApp(backend, { mcp: { stdioCommands: ["/usr/local/bin/x"], stdioEnv: ["KEY"] } });
    const issues = async (input: UpsertMcpServerInput) =>
      expectType((await t!.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "ValidationError")
        .issues.map((i) => i.field)
        .sort();
    expect(await issues({ name: "a", transport: "HTTP" as McpTransport })).toEqual(["url"]);
    expect(await issues({ name: "a", transport: "HTTP" as McpTransport, url: "ftp://x" })).toEqual(["url"]);
    expect(await issues({ name: "a", transport: "STDIO" as McpTransport, url: "http://x" })).toEqual(["command", "url"]);
    expect(await issues({ name: "a_b", transport: "HTTP" as McpTransport, url: "http://x" })).toEqual(["name"]);
    expect(await issues({ name: "a", transport: "HTTP" as McpTransport, url: "http://x", env: [{ name: "X", value: "1" }] })).toEqual(["env"]);
    expect(await issues({ name: "a", transport: "STDIO" as McpTransport, command: "x", env: [{ name: "1BAD", value: "1" }] })).toEqual(["env.0.name"]);
    // A line break in a header value would let a principal add headers of its choosing.
    const smuggled = { name: "a", transport: "HTTP" as McpTransport, url: "http://x", headers: [{ name: "X-Token", value: "t\r\nX-Admin: yes" }] };
    expect(await issues(smuggled)).toEqual(["headers.0.value"]);
    expect(await issues({ ...smuggled, headers: [{ name: "X-Token", value: "t\nX-Admin: yes" }] })).toEqual(["headers.0.value"]);
    // Environment values may hold line breaks (a key file, say).
    await t.client.request(UpsertMcpServerDocument, {
      input: { name: "b", transport: "STDIO" as McpTransport, command: "/usr/local/bin/x", env: [{ name: "KEY", value: "line1\nline2" }], enabled: false },
    });
    expect((await t.client.request(McpServersDocument)).mcpServers.edges.map((edge) => edge.node).map((server) => server.name)).toContain("b");
  });
});
