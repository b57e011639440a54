// Live MCP connections per principal (R14). One connection per configured server, keyed by a
// hash of what it connects to, so an update reconnects only the servers whose connection
// settings changed. A replaced or removed server's connection is retired: it takes no new
// calls, and closes when its last in-flight call has finished (reference count), or after the
// drain timeout at the latest. Runs take a snapshot of the connected servers and their tools
// when they start; `tools/list_changed` refreshes a server's list for the runs that follow,
// coalesced: at most one listing in flight and one waiting per connection (tool-refresh.ts).
import type { EventBus } from "../../events/topics.js";
import type { Logger } from "../../logger.js";
import { keepListening, type Listening } from "../../events/keep-listening.js";
import type { McpClient, McpConnectionState, McpConnector, McpEndpoint, McpServerStatus, McpSkippedTool, McpToolInfo } from "../ports/mcp.js";
import { ToolError } from "../ports/tool.js";
import type { McpServerRecord } from "../../domain/capabilities/mcp-server-service.js";
import { STDIO_REFUSED, type StdioCommandLine, stdioRefusals } from "../../domain/capabilities/stdio-policy.js";
import { namedValuesOf } from "../../domain/json-columns.js";
import type { SecretBox } from "../../domain/secret-box.js";
import { CLOSED_REASON, UNKNOWN_REASON, endpointHash, endpointOf, publicReason } from "./mcp-endpoint.js";
import { untilAborted } from "./until-aborted.js";
import { RELIST_INTERVAL_MS, ToolRefresh } from "./tool-refresh.js";
import { batchedRead, groupedBy } from "../../domain/batched-reads.js";

export type { McpConnectionState, McpServerStatus };

export type McpConnection = {
  /** Unique within this process; shown on MCP_CALL spans. */
  readonly id: number;
  readonly serverId: string;
  serverName: string;
  /** Every call of its tools waits for the owner's approval (the server's requireApproval): kept current by every
   * sync, so the runs that pinned the connection read it as it stands when each of their calls is considered. */
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
  /** Replaced or removed: no new calls; closes when `leases` reaches 0. */
  retired: boolean;
  failedAt?: number;
  drainTimer?: NodeJS.Timeout;
};

/** One server as a run sees it for its whole execution (whether a call waits for approval: `connection.requireApproval`, live). */
export type McpSnapshotServer = { serverName: string; connection: McpConnection; tools: readonly McpToolInfo[] };

export type McpRegistryOptions = {
  /** The principals' stored server configurations, of many principals at once (the MCP server module, McpServerService). */
  servers: { listOf(principalIds: readonly string[]): Promise<(McpServerRecord & { ownerId: string })[]> };
  events: EventBus;
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
};

/** `queued`: the sync asked for and not begun yet, which every sync asked for meanwhile joins; `reconciling`: one is applying what it read. */
type PrincipalState = { servers: Map<string, McpConnection>; disabled: Set<string>; chain: Promise<void>; queued?: Promise<void>; reconciling?: boolean };

export class McpRegistry {
  private readonly principals = new Map<string, PrincipalState>();
  private readonly connects = new Map<string, number>();
  private readonly draining = new Map<string, Set<McpConnection>>();
  private nextId = 1;
  private closed = false;
  private changes?: Listening;
  /** A principal's stored servers, read with those of the other runs beginning together (batched-reads.ts). */
  private readonly stored: (principalId: string) => Promise<McpServerRecord[]>;

  constructor(private readonly options: McpRegistryOptions) {
    this.stored = batchedRead({
      readMany: async (principalIds) => groupedBy(await options.servers.listOf(principalIds), (server) => server.ownerId),
      keyOf: (principalId) => principalId,
      none: () => [],
    });
  }

  /**
   * Changes made through any instance reach this one. Listening starts with the first principal
   * this registry serves; principals no run has used here yet are connected by their first run.
   */
  private listenForChanges(): void {
    if (this.changes || this.closed) return;
    this.changes = keepListening({
      what: "MCP configuration changes",
      subscribe: () => this.options.events.subscribe("mcp:changed"),
      onEvent: (change) => {
        if (this.principals.has(change.principalId)) void this.sync(change.principalId);
      },
      // A change made meanwhile was not heard: every principal served here reads its configuration again.
      onResumed: () => {
        for (const principalId of this.principals.keys()) void this.sync(principalId);
      },
      logger: this.options.logger,
    });
  }

  /**
   * Brings the principal's connections in line with the stored configuration; serialised per
   * principal. A sync asked for while another waits to begin is that one: it reads the
   * configuration after both were asked for. With no sync in progress, the configuration is read at
   * once — with those of the other runs starting together (batched-reads.ts). The runs of a claim,
   * each pinning its snapshot, then cost one read, not one each, every one waiting for those before it.
   */
  sync(principalId: string): Promise<void> {
    const state = this.stateOf(principalId);
    if (state.queued) return state.queued;
    const read = state.reconciling ? undefined : this.stored(principalId);
    read?.catch(() => undefined);
    const queued = state.chain
      .then(async () => {
        state.queued = undefined;
        state.reconciling = true;
        try {
          await this.reconcile(state, await (read ?? this.stored(principalId)));
        } finally {
          state.reconciling = false;
        }
      })
      .catch((error: unknown) => this.options.logger.error("mcp sync failed", { principalId, error: String(error) }));
    state.queued = queued;
    state.chain = queued;
    return queued;
  }

  /**
   * The connected servers and their tools as of now: what a starting run pins. Connecting and
   * listing count against the run's deadline: once `signal` aborts the run stops waiting (its
   * worker slot is free), while the connection goes on within its own limits for later runs.
   */
  async snapshot(principalId: string, signal?: AbortSignal): Promise<McpSnapshotServer[]> {
    await untilAborted(this.sync(principalId), signal);
    const connections = [...this.stateOf(principalId).servers.values()];
    await untilAborted(Promise.all(connections.map((c) => c.ready)), signal);
    return connections
      .filter((c) => c.state === "CONNECTED" && !c.retired)
      .sort((a, b) => (a.serverName < b.serverName ? -1 : 1))
      .map((connection) => ({ serverName: connection.serverName, connection, tools: connection.tools }));
  }

  /** Status of each of the principal's servers, by server id, after connecting what needs it. */
  async status(principalId: string): Promise<Map<string, McpServerStatus>> {
    await this.sync(principalId);
    const state = this.stateOf(principalId);
    await Promise.all([...state.servers.values()].map((c) => c.ready));
    const statuses = new Map<string, McpServerStatus>();
    const extra = (serverId: string) => ({ connects: this.connects.get(serverId) ?? 0, draining: this.draining.get(serverId)?.size ?? 0 });
    for (const [serverId, c] of state.servers) {
      statuses.set(serverId, { state: c.state, error: c.error ?? null, tools: c.tools, skippedTools: c.skipped, ...extra(serverId) });
    }
    for (const serverId of state.disabled) statuses.set(serverId, { state: "DISABLED", error: null, tools: [], skippedTools: [], ...extra(serverId) });
    return statuses;
  }

  /** Calls a tool on a pinned connection, holding a lease on it for the duration of the call. */
  async call(connection: McpConnection, tool: string, args: Record<string, unknown>, signal: AbortSignal) {
    if (connection.retired || connection.state !== "CONNECTED" || !connection.client) {
      throw new ToolError(
        `The MCP server "${connection.serverName}" was reconfigured, removed or disconnected after this run started; its tools are unavailable to this run.`,
      );
    }
    connection.leases += 1;
    try {
      return await connection.client.callTool(tool, args, signal);
    } finally {
      connection.leases -= 1;
      if (connection.retired && connection.leases === 0) void this.closeConnection(connection);
    }
  }

  /** Closes every connection at once (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    await this.changes?.stop();
    const all = [...this.principals.values()].flatMap((state) => [...state.servers.values()]);
    all.push(...[...this.draining.values()].flatMap((set) => [...set]));
    this.principals.clear();
    await Promise.all(all.map((c) => this.closeConnection(c)));
  }

  private stateOf(principalId: string): PrincipalState {
    let state = this.principals.get(principalId);
    if (!state) {
      this.listenForChanges();
      state = { servers: new Map(), disabled: new Set(), chain: Promise.resolve() };
      this.principals.set(principalId, state);
    }
    return state;
  }

  private async reconcile(state: PrincipalState, rows: readonly McpServerRecord[]): Promise<void> {
    if (this.closed) return;
    const wanted = new Set<string>();
    state.disabled = new Set(rows.filter((row) => !row.enabled).map((row) => row.id));
    for (const row of rows.filter((r) => r.enabled)) {
      wanted.add(row.id);
      const hash = endpointHash(row, this.options.secrets);
      const current = state.servers.get(row.id);
      if (current && current.hash === hash && !this.dueForRetry(current)) {
        // A rename changes tool names only, and requireApproval only who must agree: not the connection.
        current.serverName = row.name;
        current.requireApproval = row.requireApproval;
        continue;
      }
      if (current) this.retire(current);
      state.servers.set(row.id, this.open(row, hash));
    }
    for (const [serverId, connection] of state.servers) {
      if (wanted.has(serverId)) continue;
      state.servers.delete(serverId);
      this.retire(connection);
    }
  }

  private dueForRetry(connection: McpConnection): boolean {
    const retryAfter = this.options.retryAfterMs ?? 5_000;
    return (connection.state === "FAILED" || connection.state === "CLOSED") && Date.now() - (connection.failedAt ?? 0) >= retryAfter;
  }

  private open(row: McpServerRecord, hash: string): McpConnection {
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
    connection.ready = this.options
      .connector(endpoint, events, signal)
      .then(async (client) => {
        connection.client = client;
        if (connection.retired) return void (await this.closeConnection(connection));
        ({ tools: connection.tools, skipped: connection.skipped } = await client.listTools());
        if (connection.state === "CONNECTING") connection.state = "CONNECTED";
      })
      .catch((error: unknown) => {
        this.fail(connection, error);
        void connection.client?.close().catch(() => undefined);
      });
    return connection;
  }

  private fail(connection: McpConnection, error: unknown): void {
    const detail = error instanceof Error ? error.message : String(error);
    const reason = publicReason(detail, (error as { code?: unknown } | null)?.code);
    // A failing connect also reports the connection closing; the more specific reason stays.
    const generic = reason === CLOSED_REASON || reason === UNKNOWN_REASON;
    if (!(connection.state === "FAILED" && connection.error && generic)) connection.error = reason;
    connection.state = "FAILED";
    connection.failedAt = Date.now();
    this.options.logger.warn("mcp server unavailable", { server: connection.serverName, error: detail });
  }

  /** Re-lists a server's tools after `tools/list_changed` (via `connection.refresh`); runs already started keep their snapshot. */
  private async refreshTools(connection: McpConnection): Promise<void> {
    await connection.ready;
    if (connection.state !== "CONNECTED" || connection.retired || !connection.client) return;
    try {
      ({ tools: connection.tools, skipped: connection.skipped } = await connection.client.listTools());
    } catch (error) {
      this.options.logger.warn("mcp tools refresh failed", { server: connection.serverName, error: String(error) });
    }
  }

  private retire(connection: McpConnection): void {
    connection.retired = true;
    if (connection.leases === 0) {
      void connection.ready.then(() => this.closeConnection(connection));
      return;
    }
    let set = this.draining.get(connection.serverId);
    if (!set) this.draining.set(connection.serverId, (set = new Set()));
    set.add(connection);
    connection.drainTimer = setTimeout(() => {
      this.options.logger.warn("mcp connection closed with calls still in flight (drain timeout)", {
        server: connection.serverName,
        inFlight: connection.leases,
      });
      void this.closeConnection(connection);
    }, this.options.drainTimeoutMs);
    connection.drainTimer.unref();
  }

  private async closeConnection(connection: McpConnection): Promise<void> {
    clearTimeout(connection.drainTimer);
    connection.refresh?.stop();
    const set = this.draining.get(connection.serverId);
    set?.delete(connection);
    if (set?.size === 0) this.draining.delete(connection.serverId);
    const wasOpen = connection.state !== "CLOSED";
    connection.state = "CLOSED";
    if (wasOpen) await connection.client?.close().catch(() => undefined);
  }
}

/** Why a stored STDIO server may not start now (the operator may have narrowed the lists since it was stored), or null. */
function stdioRefusalOf(row: McpServerRecord, options: Pick<McpRegistryOptions, "stdioCommands" | "stdioEnv">): string | null {
  const envNames = (namedValuesOf(row.env) ?? []).map((pair) => pair.name);
  const issues = stdioRefusals({ command: row.command ?? "", args: row.args, envNames }, options.stdioCommands, options.stdioEnv);
  return issues.length > 0 ? issues.map((issue) => `${issue.field} ${issue.message}`).join("; ") : null;
}
