// A principal's MCP tools are made once per listing, not by every run: the second run's tools
// hash no schema again and share the first run's schemas. And a principal's servers together offer
// at most MCP_PRINCIPAL_TOOLS_MAX tools and MCP_PRINCIPAL_LISTING_MAX_CHARS characters: a server
// past either (servers by name) is not offered, and its status says why for each of its tools.
import { afterEach, expect, it, vi } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import type { McpConnector, McpToolInfo } from "../../src/runtime/ports/mcp.js";
import type { TraceSink } from "../../src/runtime/ports/trace-sink.js";
import { McpRegistry } from "../../src/runtime/mcp/mcp-registry.js";
import { createMcpTools } from "../../src/runtime/mcp/mcp-tools.js";

const hashed = vi.hoisted(() => ({ tools: 0 }));

// Counts the digests of tools (the hashes of texts that begin with the endpoint's hash and the tool's name).
vi.mock("node:crypto", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:crypto")>();
  const createHash = (algorithm: string) => {
    const hash = actual.createHash(algorithm);
    const update = hash.update.bind(hash);
    hash.update = ((data: string) => {
      if (typeof data === "string" && /^\{"endpoint":"[0-9a-f]{64}","tool":/.test(data)) hashed.tools += 1;
      return update(data);
    }) as typeof hash.update;
    return hash;
  };
  return { ...actual, createHash, default: { ...actual, createHash } };
});

let registry: McpRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
});

const toolsOf = (server: string, count: number, schemaChars = 0): McpToolInfo[] =>
  Array.from({ length: count }, (_, i) => ({
    name: `${server}_${i}`,
    description: `tool ${i} of ${server}`,
    inputSchema: { type: "object", properties: { text: { type: "string", description: "x".repeat(schemaChars) } } },
  }));

function registryOf(listings: Record<string, McpToolInfo[]>): McpRegistry {
  const row = (name: string) => ({
    id: name,
    ownerId: "p1",
    name,
    transport: "HTTP" as const,
    command: null,
    args: [],
    env: [],
    url: `https://${name}.example/mcp`,
    headers: [],
    enabled: true,
    requireApproval: false,
  });
  const connector: McpConnector = async (endpoint) => {
    const name = new URL((endpoint as { url: string }).url).hostname.split(".")[0]!;
    return {
      listTools: async () => ({ tools: listings[name]!, skipped: [] }),
      callTool: async () => ({ text: "", isError: false }),
      close: async () => undefined,
    };
  };
  return new McpRegistry({
    servers: { listOf: async () => Object.keys(listings).map(row) },
    events: createEventBus(),
    logger: silentLogger,
    connector,
    stdioCommands: [],
    stdioEnv: [],
    drainTimeoutMs: 1_000,
  });
}

const sink = {} as TraceSink;
/** The bounds as the principal reads them (MCP_PRINCIPAL_TOOLS_MAX, MCP_PRINCIPAL_LISTING_MAX_CHARS). */
const MCP_PRINCIPAL_TOOLS_MAX = 1_000;
const MCP_PRINCIPAL_LISTING_MAX_CHARS = 8_388_608;

it("makes a listing's tools once: the second run hashes no schema and shares the first run's", async () => {
  registry = registryOf({ alpha: toolsOf("alpha", 40), beta: toolsOf("beta", 60) });
  hashed.tools = 0;
  const first = await createMcpTools(registry, "p1", sink);
  expect(first).toHaveLength(100);
  expect(hashed.tools).toBe(100);

  hashed.tools = 0;
  const second = await createMcpTools(registry, "p1", sink);
  expect(hashed.tools).toBe(0);
  expect(second.map((tool) => tool.mcpDigest)).toEqual(first.map((tool) => tool.mcpDigest));
  expect(second.every((tool, i) => tool.schema.parameters === first[i]!.schema.parameters)).toBe(true);
});

it("offers a principal's servers, by name, up to the tools bound in all; a server past it shows why", async () => {
  const half = MCP_PRINCIPAL_TOOLS_MAX / 2 + 100;
  registry = registryOf({ alpha: toolsOf("alpha", half), beta: toolsOf("beta", half), gamma: toolsOf("gamma", 100) });
  const tools = await createMcpTools(registry, "p1", sink);
  expect(new Set(tools.map((tool) => tool.mcpTool?.split("/")[0]))).toEqual(new Set(["alpha", "gamma"]));
  expect(tools).toHaveLength(half + 100);

  const status = await registry.status("p1");
  expect([...status].map(([id, s]) => [id, s.state, s.tools.length, s.skippedTools.length])).toEqual([
    ["alpha", "CONNECTED", half, 0],
    ["beta", "CONNECTED", 0, half],
    ["gamma", "CONNECTED", 100, 0],
  ]);
  expect(status.get("beta")!.skippedTools[0]).toEqual({
    position: 0,
    reason: `this server's 600 tools and the 600 of your servers before it (by name) go past the 1,000 tools a run is offered in all`,
  });
});

it("offers a principal's servers up to the characters bound in all", async () => {
  // Three servers of about 3.2 million characters each: two fit in the bound, the third does not.
  const chars = Math.floor(MCP_PRINCIPAL_LISTING_MAX_CHARS / 2.6 / 10);
  registry = registryOf({ alpha: toolsOf("alpha", 10, chars), beta: toolsOf("beta", 10, chars), gamma: toolsOf("gamma", 10, chars) });
  const tools = await createMcpTools(registry, "p1", sink);
  expect(new Set(tools.map((tool) => tool.mcpTool?.split("/")[0]))).toEqual(new Set(["alpha", "beta"]));
  const gamma = (await registry.status("p1")).get("gamma")!;
  expect(gamma.tools).toEqual([]);
  expect(gamma.skippedTools.map((tool) => tool.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  expect(gamma.skippedTools[0]!.reason).toMatch(
    /^this server's tools take 3,2\d\d,\d\d\d characters, and those of your servers before it \(by name\) 6,4\d\d,\d\d\d: a run is offered at most 8,388,608 in all$/,
  );
});
