// Live MCP connections per principal (R14). One connection per configured server, keyed by a
// hash of what it connects to, so an update reconnects only the servers whose connection
// settings changed; a replaced or removed server's connection is retired (mcp-connections.ts).
// Runs take a snapshot of the connected servers and their tools when they start, and hold their
// principal's connections until their attempt is over; `tools/list_changed` refreshes a server's
// list for the runs that follow, coalesced (tool-refresh.ts). A principal no run holds and no one
// used for the idle period (MCP_IDLE_CLOSE_MS) has its connections retired and its state dropped:
// open connections and processes follow the principals active now, not every one ever seen. The
// next run or status read connects again.
import type { EventBus } from "../../events/topics.js";
import { keepListening, type Listening } from "../../events/keep-listening.js";
import type { McpConnectionState, McpServerStatus, McpToolInfo } from "../ports/mcp.js";
import { ToolError } from "../ports/tool.js";
import type { McpServerRecord } from "../../domain/capabilities/mcp-server-service.js";
import { endpointHash } from "./mcp-endpoint.js";
import { untilAborted } from "./until-aborted.js";
import { pastPrincipalBound } from "./mcp-tool-definitions.js";
import { batchedRead, groupedBy } from "../../domain/batched-reads.js";
import { redactUrlsIn } from "../../domain/sealed-url.js";
import { type McpConnection, type McpConnectionOptions, McpConnections } from "./mcp-connections.js";

export type { McpConnection, McpConnectionState, McpServerStatus };

/**
 * One server as a run sees it for its whole execution. Whether a call waits for approval is read
 * from the database as the run's step is gated (loop/mcp-servers-now.ts), not from this registry's
 * last sync: `connection.requireApproval` is what the last of the two found.
 */
export type McpSnapshotServer = { serverName: string; connection: McpConnection; tools: readonly McpToolInfo[] };

/** How long a principal's connections stay open once no run holds them and no one used them, by default. */
export const MCP_IDLE_CLOSE_MS = 300_000;

export type McpRegistryOptions = McpConnectionOptions & {
  /** The principals' stored server configurations, of many principals at once (the MCP server module, McpServerService). */
  servers: { listOf(principalIds: readonly string[]): Promise<(McpServerRecord & { ownerId: string })[]> };
  events: EventBus;
  /** A principal's connections close once no run holds them and no one used them for this long (MCP_IDLE_CLOSE_MS by default). */
  idleCloseMs?: number;
};

/**
 * `queued`: the sync asked for and not begun yet, which every sync asked for meanwhile joins; `reconciling`: one is applying what it read.
 * `holds`: runs holding the principal's connections, and status reads in progress; `usedAt`: when the last of them ended.
 * `dropped`: closed as idle; a sync still pending on it opens nothing.
 */
type PrincipalState = {
  servers: Map<string, McpConnection>;
  disabled: Set<string>;
  chain: Promise<void>;
  queued?: Promise<void>;
  reconciling?: boolean;
  holds: number;
  usedAt: number;
  dropped?: boolean;
};

export class McpRegistry {
  private readonly principals = new Map<string, PrincipalState>();
  private readonly connections: McpConnections;
  private closed = false;
  private changes?: Listening;
  private idleSweep?: NodeJS.Timeout;
  /** A principal's stored servers, read with those of the other runs beginning together (batched-reads.ts). */
  private readonly stored: (principalId: string) => Promise<McpServerRecord[]>;

  constructor(private readonly options: McpRegistryOptions) {
    this.connections = new McpConnections(options);
    this.stored = batchedRead({
      readMany: async (principalIds) => groupedBy(await options.servers.listOf(principalIds), (server) => server.ownerId),
      keyOf: (principalId) => principalId,
      none: () => [],
    });
  }

  private get idleCloseMs(): number {
    return this.options.idleCloseMs ?? MCP_IDLE_CLOSE_MS;
  }

  /**
   * Changes made through any instance reach this one, and idle principals are closed. Both start
   * with the first principal this registry serves; principals no run has used here yet (or whose
   * state was dropped as idle) are connected by their next run or status read.
   */
  private start(): void {
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
    // A principal is closed between one and one and a half idle periods after its last use.
    this.idleSweep = setInterval(() => void this.closeIdle(), Math.max(this.idleCloseMs / 2, 10));
    this.idleSweep.unref();
  }

  /**
   * Brings the principal's connections in line with the stored configuration; serialised per
   * principal. A sync asked for while another waits to begin is that one: it reads the
   * configuration after both were asked for. With no sync in progress, the configuration is read at
   * once — with those of the other runs starting together (batched-reads.ts). The runs of a claim,
   * each pinning its snapshot, then cost one read, not one each, every one waiting for those before it.
   */
  sync(principalId: string): Promise<void> {
    return this.syncOf(principalId, this.stateOf(principalId));
  }

  private syncOf(principalId: string, state: PrincipalState): Promise<void> {
    if (state.queued) return state.queued;
    const read = state.reconciling ? undefined : this.stored(principalId);
    read?.catch(() => undefined);
    const queued = state.chain
      .then(async () => {
        state.queued = undefined;
        state.reconciling = true;
        try {
          await this.reconcile(principalId, state, await (read ?? this.stored(principalId)));
        } finally {
          state.reconciling = false;
        }
      })
      .catch((error: unknown) => this.options.logger.error("mcp sync failed", { principalId, error: redactUrlsIn(String(error)) }));
    state.queued = queued;
    state.chain = queued;
    return queued;
  }

  /**
   * The connected servers and their tools as of now: what a starting run pins. Connecting and
   * listing count against the run's deadline: once `signal` aborts the run stops waiting (its
   * worker slot is free), while the connection goes on within its own limits for later runs.
   * The principal's connections are held until `heldUntil` aborts (the run's attempt is over):
   * they are not closed as idle meanwhile. Without it, only while the snapshot is taken.
   */
  async snapshot(principalId: string, signal?: AbortSignal, heldUntil?: AbortSignal): Promise<McpSnapshotServer[]> {
    const { state, release } = this.hold(principalId);
    if (heldUntil?.aborted) release();
    else heldUntil?.addEventListener("abort", release, { once: true });
    try {
      await untilAborted(this.syncOf(principalId, state), signal);
      const connections = [...state.servers.values()];
      await untilAborted(Promise.all(connections.map((c) => c.ready)), signal);
      return offered(connections).flatMap(({ connection, past }) => (past ? [] : [{ serverName: connection.serverName, connection, tools: connection.tools }]));
    } finally {
      if (!heldUntil) release();
    }
  }

  /** Status of each of the principal's servers, by server id, after connecting what needs it. */
  async status(principalId: string): Promise<Map<string, McpServerStatus>> {
    const { state, release } = this.hold(principalId);
    try {
      await this.syncOf(principalId, state);
      await Promise.all([...state.servers.values()].map((c) => c.ready));
      const statuses = new Map<string, McpServerStatus>();
      const pastBound = new Map(offered([...state.servers.values()]).map(({ connection, past }) => [connection, past]));
      for (const [serverId, c] of state.servers) {
        const counts = this.connections.countsOf(serverId);
        const past = pastBound.get(c);
        // A server past the principal's bound shows its tools as skipped, each with why.
        const skippedTools = past
          ? [...c.skipped, ...keptPositions(c).map((position) => ({ position, reason: past }))].sort((a, b) => a.position - b.position)
          : c.skipped;
        statuses.set(serverId, { state: c.state, error: c.error ?? null, tools: past ? [] : c.tools, skippedTools, ...counts });
      }
      for (const serverId of state.disabled) {
        statuses.set(serverId, { state: "DISABLED", error: null, tools: [], skippedTools: [], ...this.connections.countsOf(serverId) });
      }
      return statuses;
    } finally {
      release();
    }
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
      if (connection.retired && connection.leases === 0) void this.connections.close(connection);
    }
  }

  /**
   * Retires the connections of every principal no run holds, no call is in flight for and no one
   * used for the idle period, and drops their state; resolves once those connections have closed.
   * Which principals are idle is decided at once, when called: a run or status read that begins
   * afterwards finds no state and connects again.
   */
  async closeIdle(): Promise<void> {
    const now = this.connections.now();
    const closing: Promise<void>[] = [];
    for (const [principalId, state] of this.principals) {
      if (state.holds > 0 || now - state.usedAt < this.idleCloseMs) continue;
      if ([...state.servers.values()].some((c) => c.leases > 0)) continue;
      this.principals.delete(principalId);
      state.dropped = true;
      for (const connection of state.servers.values()) closing.push(this.connections.retire(connection));
      state.servers.clear();
    }
    await Promise.all(closing);
  }

  /** Closes every connection at once (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleSweep);
    await this.changes?.stop();
    const all = [...this.principals.values()].flatMap((state) => [...state.servers.values()]);
    all.push(...this.connections.allDraining());
    this.principals.clear();
    await Promise.all(all.map((c) => this.connections.close(c)));
  }

  private stateOf(principalId: string): PrincipalState {
    let state = this.principals.get(principalId);
    if (!state) {
      this.start();
      state = { servers: new Map(), disabled: new Set(), chain: Promise.resolve(), holds: 0, usedAt: this.connections.now() };
      this.principals.set(principalId, state);
    }
    return state;
  }

  /** The principal's state, held (not closed as idle) until `release` is called (once; later calls do nothing). */
  private hold(principalId: string): { state: PrincipalState; release: () => void } {
    const state = this.stateOf(principalId);
    state.holds += 1;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      state.holds -= 1;
      state.usedAt = this.connections.now();
    };
    return { state, release };
  }

  private async reconcile(principalId: string, state: PrincipalState, rows: readonly McpServerRecord[]): Promise<void> {
    // A sync asked for before the principal was closed as idle opens nothing: its next use connects.
    if (this.closed || state.dropped) return;
    const wanted = new Set<string>();
    state.disabled = new Set(rows.filter((row) => !row.enabled).map((row) => row.id));
    for (const row of rows.filter((r) => r.enabled)) {
      wanted.add(row.id);
      const hash = endpointHash(row, this.options.secrets);
      const current = state.servers.get(row.id);
      if (current && current.hash === hash && !this.connections.dueForRetry(current)) {
        // A rename changes tool names only, and requireApproval only who must agree: not the connection.
        // (Runs do not wait for this sync to hold calls: each step reads requireApproval as stored.)
        current.serverName = row.name;
        current.requireApproval = row.requireApproval;
        continue;
      }
      if (current) void this.connections.retire(current);
      state.servers.set(row.id, this.connections.open(row, hash, principalId));
    }
    for (const [serverId, connection] of state.servers) {
      if (wanted.has(serverId)) continue;
      state.servers.delete(serverId);
      void this.connections.retire(connection);
    }
  }
}

/** The connected servers by name, each with why it is past the principal's bound on tools (mcp-tool-definitions.ts), or null. */
function offered(connections: readonly McpConnection[]): { connection: McpConnection; past: string | null }[] {
  const connected = connections.filter((c) => c.state === "CONNECTED" && !c.retired).sort((a, b) => (a.serverName < b.serverName ? -1 : 1));
  const past = pastPrincipalBound(connected.map((c) => c.tools));
  return connected.map((connection, index) => ({ connection, past: past[index]! }));
}

/** Where the server listed each tool kept, in order: the positions its skipped tools leave (a listing numbers every entry). */
function keptPositions(connection: McpConnection): number[] {
  const skipped = new Set(connection.skipped.map((tool) => tool.position));
  const positions: number[] = [];
  for (let position = 0; positions.length < connection.tools.length; position += 1) if (!skipped.has(position)) positions.push(position);
  return positions;
}
