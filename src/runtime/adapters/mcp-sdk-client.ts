// The MCP port over @modelcontextprotocol/sdk: stdio (a local program, no shell) and streamable
// HTTP transports, tool listing with pagination, tool calls, and `tools/list_changed`. What the
// server sends is capped while it arrives and listing is bounded (mcp-limits.ts).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpCallResult, McpClient, McpConnector, McpEndpoint, McpToolListing } from "../ports/mcp.js";
import { answersBounded } from "./mcp-answers.js";
import { AnyToolsPage } from "./mcp-listed-tools.js";
import { DEFAULT_MCP_LIMITS, isStdioOverflow, listToolsBounded, type McpLimits, McpMessageTooLarge, sizeCappedFetch } from "./mcp-limits.js";
import { AnyCallToolResult, keepEveryResult, resultText } from "./mcp-results.js";

/**
 * The SDK, read on the first connection: a server whose runs use no MCP server never loads it
 * (about 7 MB of heap that an ES module would keep for the life of the process).
 */
let sdk:
  | Promise<{
      Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
      StdioClientTransport: typeof import("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport;
      StreamableHTTPClientTransport: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport;
      ToolListChangedNotificationSchema: typeof import("@modelcontextprotocol/sdk/types.js").ToolListChangedNotificationSchema;
    }>
  | undefined;
const loadSdk = () =>
  (sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(([client, stdio, http, types]) => ({
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  })));

/** The last lines a stdio server wrote to stderr, kept to explain a failed connection. */
const STDERR_TAIL_CHARS = 2_000;

/** A call's own limit is the run's tool timeout (the executor aborts the signal); this is a backstop. */
const CALL_BACKSTOP_MS = 24 * 60 * 60 * 1000;

/**
 * Connects over the SDK; HTTP servers are reached through `fetchFor(principalId)`, the outbound
 * guard that refuses addresses inside the network, on connections of the server's principal
 * (their names count against that principal's lookups: see src/outbound/outbound-http.ts).
 */
export const mcpSdkConnector =
  (fetchFor: (principalId: string) => typeof globalThis.fetch, limits: McpLimits = DEFAULT_MCP_LIMITS): McpConnector =>
  async (endpoint, events, signal, principalId) => {
    const { Client, StdioClientTransport, StreamableHTTPClientTransport, ToolListChangedNotificationSchema } = await loadSdk();
    const inFlight = new InFlight();
    const cuts = new RequestSignals();
    let closing = false;
    let refused: McpMessageTooLarge | undefined;
    const { transport, stderrTail } = createTransport(
      { StdioClientTransport, StreamableHTTPClientTransport },
      endpoint,
      cuts.fetch(answersBounded(fetchFor(principalId))),
      limits,
      (error, method) => {
        inFlight.failAll(error);
        // An answer over the cap fails its request; a message over the cap on the stream the server
        // speaks on unasked (GET) fails the connection, which would otherwise open that stream again.
        if (method === "POST" || refused) return;
        refused = error;
        void client.close().catch(() => undefined);
      },
    );
    // A tool's answer is kept as the server sent it, never checked against its output schema (mcp-results.ts).
    const client = new Client({ name: "dossier", version: "0.1.0" }, { capabilities: {}, jsonSchemaValidator: keepEveryResult });
    // The stdio transport drops a line over the cap, reports it here, then closes the connection.
    client.onerror = (error) => {
      if (isStdioOverflow(error)) inFlight.failAll(new McpMessageTooLarge(limits.resultMaxBytes));
    };
    client.onclose = () => {
      if (!closing) events.onClosed(refused ?? new Error(`the MCP server closed the connection${stderrTail() ? `: ${stderrTail()}` : ""}`));
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => events.onToolsChanged());
    try {
      // The SDK gives `signal` to `initialize` only: the `notifications/initialized` it sends next
      // would wait for a server that never answers it as long as the HTTP client waits. Closing the
      // client (below) ends that request.
      await whileNotAborted(client.connect(transport, { signal }), signal);
    } catch (error) {
      closing = true;
      await client.close().catch(() => undefined);
      const detail = stderrTail();
      // The HTTP status (the SDK's `code`) stays on the error: the registry reports it, not the body.
      throw Object.assign(new Error(`${error instanceof Error ? error.message : String(error)}${detail ? ` (stderr: ${detail})` : ""}`), {
        code: (error as { code?: unknown } | null)?.code,
      });
    }
    return new SdkMcpClient(client, limits, inFlight, cuts, () => {
      closing = true;
    });
  };

/** `work`, or the signal's reason as soon as it aborts. */
function whileNotAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function createTransport(
  { StdioClientTransport, StreamableHTTPClientTransport }: Pick<Awaited<ReturnType<typeof loadSdk>>, "StdioClientTransport" | "StreamableHTTPClientTransport">,
  endpoint: McpEndpoint,
  fetch: typeof globalThis.fetch,
  limits: McpLimits,
  onTooLarge: (error: McpMessageTooLarge, method: string) => void,
): { transport: Transport; stderrTail: () => string } {
  if (endpoint.transport === "HTTP") {
    const capped = sizeCappedFetch(fetch, limits.resultMaxBytes, onTooLarge);
    return {
      transport: new StreamableHTTPClientTransport(new URL(endpoint.url), { requestInit: { headers: endpoint.headers }, fetch: capped }),
      stderrTail: () => "",
    };
  }
  const transport = new StdioClientTransport({
    command: endpoint.command,
    args: endpoint.args,
    env: endpoint.env,
    cwd: endpoint.cwd,
    stderr: "pipe",
    // One JSON-RPC message is one line: a line over the cap is dropped as it arrives.
    maxBufferSize: limits.resultMaxBytes,
  });
  let tail = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  });
  return { transport, stderrTail: () => tail.trim() };
}

/**
 * The requests waiting for an answer on one connection. An answer refused for its size fails
 * them: a streamed answer's error, or a stdio line dropped by the transport, reaches no request
 * on its own, and which request it answered is not known until it is read whole.
 */
class InFlight {
  private readonly waiting = new Set<(error: Error) => void>();

  run<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.add(reject);
      work.then(resolve, reject).finally(() => this.waiting.delete(reject));
    });
  }

  failAll(error: Error): void {
    for (const reject of this.waiting) reject(error);
    this.waiting.clear();
  }
}

class SdkMcpClient implements McpClient {
  constructor(
    private readonly client: Client,
    private readonly limits: McpLimits,
    private readonly inFlight: InFlight,
    private readonly cuts: RequestSignals,
    private readonly markClosing: () => void,
  ) {}

  async listTools(): Promise<McpToolListing> {
    // A plain request, not the SDK's `listTools`, whose schema refuses the whole answer for one
    // odd tool; each tool is read on its own (mcp-listed-tools.ts).
    const { tools, skipped } = await listToolsBounded(
      (cursor, signal) => this.inFlight.run(this.client.request({ method: "tools/list", params: cursor ? { cursor } : undefined }, AnyToolsPage, { signal })),
      this.limits,
    );
    return { tools, skipped };
  }

  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    // A plain request, not the SDK's `callTool`, which would refuse a text-only answer of a tool
    // with an output schema and check the structured content against it.
    const result = await this.cuts.during(this.client, signal, () =>
      this.inFlight.run(
        this.client.request({ method: "tools/call", params: { name, arguments: args } }, AnyCallToolResult, { signal, timeout: CALL_BACKSTOP_MS }),
      ),
    );
    return resultText(result);
  }

  async close(): Promise<void> {
    this.markClosing();
    await this.client.close();
  }
}

/**
 * Ties each call's HTTP request to the call's own signal. The SDK aborts its requests only all
 * together (closing the transport); a call cut off by its signal (the run's tool timeout, a stop)
 * only rejects, and its request would stay open on the server — and in the connection pool —
 * until the server answers. The request is known by the JSON-RPC id the client gives the call
 * (the next of its counter), which ends the body the transport sends.
 */
class RequestSignals {
  private readonly signals = new Map<number, AbortSignal>();

  async during<T>(client: Client, signal: AbortSignal, request: () => Promise<T>): Promise<T> {
    const id = (client as unknown as { _requestMessageId?: unknown })._requestMessageId;
    if (typeof id !== "number") return request();
    this.signals.set(id, signal);
    try {
      return await request();
    } finally {
      this.signals.delete(id);
    }
  }

  fetch(fetch: typeof globalThis.fetch): typeof globalThis.fetch {
    return (input, init) => {
      const id = typeof init?.body === "string" ? /"id":(\d+)\}$/.exec(init.body)?.[1] : undefined;
      const signal = id === undefined ? undefined : this.signals.get(Number(id));
      if (!signal) return fetch(input, init);
      return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
    };
  }
}
