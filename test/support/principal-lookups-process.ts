// Run by test/runtime/principal-name-lookups.test.ts inside a network namespace of its own
// (network-namespace.ts), where names under ok.test resolve to 8.8.4.4, an address of the
// namespace's loopback, and no other name is ever answered (hanging-name-server.ts).
//   mcp:   principal A's MCP servers (as many as it may have) each sit at a name that never answers;
//          meanwhile principal B's one server, at a name that answers, is read by its status.
//   fetch: principal P1 fills its lookups in flight with names that never answer and then fetches
//          shared.hang.test; principal P2 fetches shared.hang.test too.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { createClient } from "../../sdk/client.js";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { createApp } from "../../src/compose/app.js";
import { openDatabase } from "../../src/db/open-database.js";
import { MCP_SERVERS_PER_PRINCIPAL_MAX } from "../../src/domain/capabilities/mcp-server-service.js";
import { SecretBox } from "../../src/domain/secret-box.js";
import { createEventBus } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import { NAMES_IN_FLIGHT_PER_PRINCIPAL } from "../../src/outbound/name-lookup.js";
import type { ToolContext } from "../../src/runtime/ports/tool.js";
import { createHttpFetchTool } from "../../src/runtime/tools/http-fetch.js";
import { OK_TEST_ADDRESS, startHangingNameServer } from "./hanging-name-server.js";

// mcp <migrated data folder> <cap ms> | fetch <time limit ms>
const [scenario, ...args] = process.argv.slice(2);
const nameServer = await startHangingNameServer();
const began = performance.now();

/** `work`'s result, or null when it did not finish within CAP_MS. */
async function capped<T>(work: Promise<T>, capMs: number): Promise<T | null> {
  return Promise.race([work, new Promise<null>((resolve) => setTimeout(() => resolve(null), capMs).unref())]);
}

async function untilAsked(count: number): Promise<void> {
  while (nameServer.hangingNames.size < count && performance.now() - began < 10_000) await new Promise((resolve) => setTimeout(resolve, 10));
}

async function mcpScenario(dataDir: string, capMs: number) {
  // B's MCP server: one tool, stateless, on the address its name resolves to.
  const web = createServer(async (request, response) => {
    const server = new McpServer({ name: "b-notes", version: "1.0.0" });
    server.registerTool("echo", { description: "Echoes its text.", inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: "text", text }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on("close", () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(request, response);
  });
  await new Promise<void>((resolve) => web.listen(0, OK_TEST_ADDRESS, resolve));
  const port = (web.address() as AddressInfo).port;

  // The app as the server composes it, on the embedded database (already migrated in `dataDir`).
  const db = await openDatabase({ kind: "pglite", dataDir });
  const app = createApp({ db, events: createEventBus(), logger: silentLogger, authRequired: true, mcp: { secrets: new SecretBox(randomBytes(32)) } });
  const as = async (name: string) => {
    const { secret } = await app.services.principals.createPrincipal({ name });
    const fetch = (async (input: string, init?: RequestInit) => app.yoga.fetch(new Request(input, init))) as typeof globalThis.fetch;
    return createClient({ url: "http://dossier.test/graphql", fetch, headers: { authorization: `Bearer ${secret}` } });
  };
  const [a, b] = [await as("A"), await as("B")];
  for (let i = 0; i < MCP_SERVERS_PER_PRINCIPAL_MAX; i += 1) {
    await a.request(UpsertMcpServerDocument, { input: { name: `a${i}`, transport: "HTTP", url: `http://a${i}-${Date.now()}.hang.test/mcp` } });
  }
  await b.request(UpsertMcpServerDocument, { input: { name: "notes", transport: "HTTP", url: `http://mcp.ok.test:${port}/mcp` } });
  const statuses = (client: typeof a) =>
    client
      .request(McpServersDocument, { first: MCP_SERVERS_PER_PRINCIPAL_MAX })
      .then(({ mcpServers }) =>
        mcpServers.edges.map(({ node }) => ({ name: node.name, state: node.status.state, tools: node.status.tools.map((tool) => tool.name) })),
      );
  // A's servers connect first: their names are asked, as many at once as A may.
  const aRead = statuses(a);
  await untilAsked(NAMES_IN_FLIGHT_PER_PRINCIPAL);
  const bStatus = await capped(statuses(b), capMs);
  const aStatus = await aRead;
  await app.stop();
  await db.close();
  return {
    hangingNamesAsked: nameServer.hangingNames.size,
    bStatus,
    aStates: [...new Set(aStatus.map((s) => s.state))],
    aTools: aStatus.flatMap((s) => s.tools),
  };
}

async function fetchScenario(timeoutMs: number) {
  const tool = createHttpFetchTool({ allowedHosts: ["*.hang.test"], maxBytes: 10_000, timeoutMs });
  const contextOf = (ownerId: string, id: string): ToolContext =>
    ({ run: { id, ownerId }, runId: id, toolCallId: id, signal: new AbortController().signal }) as unknown as ToolContext;
  const fetchAs = (ownerId: string, url: string) =>
    tool.execute({ url }, contextOf(ownerId, url)).then(
      (text) => text.split("\n")[0]!,
      (error: Error) => error.message,
    );
  const filling = Array.from({ length: NAMES_IN_FLIGHT_PER_PRINCIPAL }, (_, i) => fetchAs("P1", `http://r${i}-${Date.now()}.hang.test/`));
  await untilAsked(NAMES_IN_FLIGHT_PER_PRINCIPAL);
  const p1Shared = fetchAs("P1", "http://shared.hang.test/");
  await new Promise((resolve) => setTimeout(resolve, 100));
  const p2Shared = fetchAs("P2", "http://shared.hang.test/");
  // Before the first of P1's lookups gives up (each takes about seven seconds here).
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const askedAtOnce = [...nameServer.hangingNames.keys()];
  const [p1, p2] = await Promise.all([p1Shared, p2Shared, ...filling]);
  return { askedAtOnce: askedAtOnce.length, sharedAskedAtOnce: askedAtOnce.includes("shared.hang.test"), p1, p2 };
}

const result = scenario === "mcp" ? await mcpScenario(args[0]!, Number(args[1])) : await fetchScenario(Number(args[0]));
nameServer.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
