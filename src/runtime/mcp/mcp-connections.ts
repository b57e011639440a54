// One MCP connection's life: opening it (connect, then list its tools), failing, re-listing its
// tools after `tools/list_changed`, retiring and closing it. A retired connection (its server
// replaced or removed, or its principal idle) takes no new calls, and closes when its last
// in-flight call has finished (reference count), or after the drain timeout at the latest.
import type { Logger } from "../../logger.js";
import type { McpClient, McpConnectionState, McpConnector, McpEndpoint, McpSkippedTool, McpToolInfo } from "../ports/mcp.js";
import type { McpServerRecord } from "../../domain/capabilities/mcp-server-service.js";
import { STDIO_REFUSED, type StdioCommandLine, stdioRefusals } from "../../domain/capabilities/stdio-policy.js";
import { namedValuesOf } from "../../domain/json-columns.js";
import type { SecretBox } from "../../domain/secret-box.js";
import { redactUrlsIn } from "../../domain/sealed-url.js";
import { CLOSED_REASON, UNKNOWN_REASON, endpointOf, publicReason } from "./mcp-endpoint.js";
import { RELIST_INTERVAL_MS, ToolRefresh } from "./tool-refresh.js";
import { untilAborted } from "./until-aborted.js";

export type McpConnection = {
  /** Unique within this process; shown on MCP_CALL spans. */
  readonly id: number;
  readonly serverId: string;
  serverName: string;
  /** Every call of its tools waits for the owner's approval (the server's requireApproval): set by every sync, and
   * by each step of a run that pinned the connection, which reads it as stored before its calls are gated. */
  requireApproval: boolean;
  readonly hash: string;
  state: McpConnectionState;
  error?: string;
  tools: McpToolInfo[];
  /** Tools of the last listing that runs are not offered, with why. */
  skipped: McpSkippedTool[];
  client?: McpClient;
  /** Re-lists the tools after `tools/list_changed`, coalesced. */
  refresh?: ToolRefresh;
  ready: Promise<void>;
  /** Calls in flight on this connection. */
  leases: number;
  /** Replaced, removed or idle: no new calls; closes when `leases` reaches 0. */
  retired: boolean;
  failedAt?: number;
  drainTimer?: NodeJS.Timeout;
};

export type McpConnectionOptions = {
  logger: Logger;
  connector: McpConnector;
  /** The command lines STDIO servers may start (MCP_STDIO_COMMANDS) and the environment names they may set (MCP_STDIO_ENV); none by default. */
  stdioCommands: readonly StdioCommandLine[];
  stdioEnv: readonly string[];
  /** Opens the sealed header and environment values (see domain/secret-box.ts). */
  secrets?: SecretBox;
  /** The longest a retired connection waits for its in-flight calls before it closes anyway. */
  drainTimeoutMs: number;
  connectTimeoutMs?: number;
  /** A failed server is retried by the next run or status read after this long. */
  retryAfterMs?: number;
  /** The least time between two re-listings of one connection's tools (RELIST_INTERVAL_MS by default). */
  relistIntervalMs?: number;
  /** The clock of retries and idle periods, in milliseconds (Date.now by default; tests move it). */
  now?: () => number;
};

/** The connections of this process, every principal's: opened, retired and closed here. */
export class McpConnections {
  private readonly connects = new Map<string, number>();
  private readonly draining = new Map<string, Set<McpConnection>>();
  private nextId = 1;

  constructor(private readonly options: McpConnectionOptions) {}

  now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** Connections this process has opened to the server, and its retired ones still finishing calls in flight. */
  countsOf(serverId: string): { connects: number; draining: number } {
    return { connects: this.connects.get(serverId) ?? 0, draining: this.draining.get(serverId)?.size ?? 0 };
  }

  /** Every retired connection still finishing calls in flight. */
  allDraining(): McpConnection[] {
    return [...this.draining.values()].flatMap((set) => [...set]);
  }

  dueForRetry(connection: McpConnection): boolean {
    const retryAfter = this.options.retryAfterMs ?? 5_000;
    return (connection.state === "FAILED" || connection.state === "CLOSED") && this.now() - (connection.failedAt ?? 0) >= retryAfter;
  }

  /** Opens a connection to `principalId`'s server `row`. */
  open(row: McpServerRecord, hash: string, principalId: string): McpConnection {
    const connection: McpConnection = {
      id: this.nextId++,
      serverId: row.id,
      serverName: row.name,
      requireApproval: row.requireApproval,
      hash,
      state: "CONNECTING",
      tools: [],
      skipped: [],
      leases: 0,
      retired: false,
      ready: Promise.resolve(),
    };
    // Checked again at connect time: the operator may have narrowed the list since the row was stored.
    const refused = row.transport === "STDIO" ? stdioRefusalOf(row, this.options) : null;
    if (refused) {
      this.fail(connection, Object.assign(new Error(refused), { code: STDIO_REFUSED }));
      return connection;
    }
    let endpoint: McpEndpoint;
    try {
      endpoint = endpointOf(row, this.options.secrets);
    } catch (error) {
      this.fail(connection, error instanceof Error ? error : new Error(String(error)));
      return connection;
    }
    this.connects.set(row.id, (this.connects.get(row.id) ?? 0) + 1);
    const signal = AbortSignal.timeout(this.options.connectTimeoutMs ?? 15_000);
    const refresh = new ToolRefresh(() => this.refreshTools(connection), this.options.relistIntervalMs ?? RELIST_INTERVAL_MS);
    connection.refresh = refresh;
    const events = {
      onToolsChanged: () => refresh.request(),
      onClosed: (error?: Error) => {
        if (connection.state === "CLOSED") return;
        this.fail(connection, error ?? new Error("the MCP server closed the connection"));
        connection.state = "CLOSED";
      },
    };
    // The connect as a whole is bounded here, whatever the connector does with `signal`: a client
    // that arrives after the timeout is closed at once. The listing has its own limit (MCP_LIST_TIMEOUT_MS).
    let gaveUp = false;
    const connected = this.options.connector(endpoint, events, signal, principalId).then(async (client) => {
      if (gaveUp) return void (await client.close().catch(() => undefined));
      connection.client = client;
      return client;
    });
    connection.ready = untilAborted(connected, signal)
      .then(async (client) => {
        if (!client) return;
        if (connection.retired) return void (await this.close(connection));
        ({ tools: connection.tools, skipped: connection.skipped } = await client.listTools());
        if (connection.state === "CONNECTING") connection.state = "CONNECTED";
      })
      .catch((error: unknown) => {
        gaveUp = true;
        this.fail(connection, signal.aborted && !connection.client ? new Error("the connection timed out") : error);
        void connection.client?.close().catch(() => undefined);
      });
    return connection;
  }

  /** No new calls; closes once its calls in flight have finished (at once without any), or at the drain timeout. Resolves when it has closed. */
  retire(connection: McpConnection): Promise<void> {
    connection.retired = true;
    if (connection.leases === 0) return connection.ready.then(() => this.close(connection));
    let set = this.draining.get(connection.serverId);
    if (!set) this.draining.set(connection.serverId, (set = new Set()));
    set.add(connection);
    connection.drainTimer = setTimeout(() => {
      this.options.logger.warn("mcp connection closed with calls still in flight (drain timeout)", {
        server: connection.serverName,
        inFlight: connection.leases,
      });
      void this.close(connection);
    }, this.options.drainTimeoutMs);
    connection.drainTimer.unref();
    return Promise.resolve();
  }

  async close(connection: McpConnection): Promise<void> {
    clearTimeout(connection.drainTimer);
    connection.refresh?.stop();
    const set = this.draining.get(connection.serverId);
    set?.delete(connection);
    if (set?.size === 0) this.draining.delete(connection.serverId);
    const wasOpen = connection.state !== "CLOSED";
    connection.state = "CLOSED";
    if (wasOpen) await connection.client?.close().catch(() => undefined);
  }

  private fail(connection: McpConnection, error: unknown): void {
    const detail = error instanceof Error ? error.message : String(error);
    const reason = publicReason(detail, (error as { code?: unknown } | null)?.code);
    // A failing connect also reports the connection closing; the more specific reason stays.
    const generic = reason === CLOSED_REASON || reason === UNKNOWN_REASON;
    if (!(connection.state === "FAILED" && connection.error && generic)) connection.error = reason;
    connection.state = "FAILED";
    connection.failedAt = this.now();
    // A message may repeat the URL it failed on, whose path, query or password is a secret (stored sealed).
    this.options.logger.warn("mcp server unavailable", { server: connection.serverName, error: redactUrlsIn(detail) });
  }

  /** Re-lists a server's tools after `tools/list_changed` (via `connection.refresh`); runs already started keep their snapshot. */
  private async refreshTools(connection: McpConnection): Promise<void> {
    await connection.ready;
    if (connection.state !== "CONNECTED" || connection.retired || !connection.client) return;
    try {
      ({ tools: connection.tools, skipped: connection.skipped } = await connection.client.listTools());
    } catch (error) {
      this.options.logger.warn("mcp tools refresh failed", { server: connection.serverName, error: redactUrlsIn(String(error)) });
    }
  }
}

/** Why a stored STDIO server may not start now (the operator may have narrowed the lists since it was stored), or null. */
function stdioRefusalOf(row: McpServerRecord, options: Pick<McpConnectionOptions, "stdioCommands" | "stdioEnv">): string | null {
  const envNames = (namedValuesOf(row.env) ?? []).map((pair) => pair.name);
  const issues = stdioRefusals({ command: row.command ?? "", args: row.args, envNames }, options.stdioCommands, options.stdioEnv);
  return issues.length > 0 ? issues.map((issue) => `${issue.field} ${issue.message}`).join("; ") : null;
}
