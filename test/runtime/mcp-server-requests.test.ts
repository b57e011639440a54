// A server that sends requests without end on its event stream (here 3000 pings, in a process of
// its own) and never takes the answers: Dossier keeps a handful of sockets to it, not one per
// answer, and the process stays responsive for everyone else meanwhile.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterEach, expect, it } from "vitest";
import { createOutboundHttp, type OutboundHttp } from "../../src/outbound/outbound-http.js";
import { DEFAULT_MCP_LIMITS } from "../../src/runtime/adapters/mcp-limits.js";
import { mcpSdkConnector } from "../../src/runtime/adapters/mcp-sdk-client.js";
import type { McpClient } from "../../src/runtime/ports/mcp.js";
import { projectRoot } from "../support/processes.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const PINGS = 3_000;
type Stats = { sent: number; answers: number; sockets: number; most: number };

let child: ChildProcess | undefined;
let outbound: OutboundHttp | undefined;
let client: McpClient | undefined;
afterEach(async () => {
  await client?.close().catch(() => undefined);
  await outbound?.close().catch(() => undefined);
  child?.kill();
});

it("a flood of pings holds a handful of sockets, and the process stays responsive", { timeout: 90_000 }, async () => {
  child = spawn(process.execPath, [path.join(projectRoot, "test/support/mcp-flood-server.mjs"), String(PINGS)], { stdio: ["ignore", "pipe", "inherit"] });
  let stats: Stats = { sent: 0, answers: 0, sockets: 0, most: 0 };
  const port = await new Promise<number>((resolve) =>
    child!.stdout!.on("data", (data: Buffer) => {
      const text = data.toString();
      const found = /PORT (\d+)/.exec(text);
      if (found) resolve(Number(found[1]));
      const last = text.match(/STATS [^\n]*/g)?.at(-1);
      if (last) stats = JSON.parse(last.slice("STATS ".length)) as Stats;
    }),
  );
  outbound = createOutboundHttp({ allowedHosts: [`127.0.0.1:${port}`], setting: "MCP_HTTP_ALLOWED_HOSTS" });
  const connect = mcpSdkConnector(outbound.fetchFor, DEFAULT_MCP_LIMITS);
  // Loaded first, so that what is measured is the flood, not loading the SDK.
  await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  await import("undici");

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  client = await connect(
    { transport: "HTTP", url: `http://127.0.0.1:${port}/mcp`, headers: {} },
    { onToolsChanged() {}, onClosed() {} },
    AbortSignal.timeout(10_000),
    "p1",
  );
  await waitUntil(async () => stats.sent === PINGS || undefined, 30_000);
  await allowTimeFor("the client to read the rest of the stream and send its answers", 3_000);
  delay.disable();

  // The event stream, the connect's own requests, and at most four answers at once (about 3,000 sockets before).
  expect(stats.most).toBeLessThanOrEqual(10);
  // Measured here under 50 ms; seconds before. Generous for a loaded machine.
  expect(delay.percentile(99) / 1e6).toBeLessThan(1_000);
  // The connection still works.
  expect(await client.listTools()).toEqual({ tools: [], skipped: [] });
});
