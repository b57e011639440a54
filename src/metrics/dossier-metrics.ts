// Dossier's instruments (S4), one set per app: each app owns a prom-client Registry, so two apps
// in one process (tests, benchmarks) never share a counter, and nothing is registered in
// prom-client's global registry. The runtime counts at the points where things happen (the trace
// recorder sees every model call, tool call, compaction and spill); gauges that something else
// knows better (runs by state: the database; WebSocket subscriptions: the HTTP server) are read
// at scrape time.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { PrismaClient } from "../generated/prisma/client.js";

/** A model call's token usage by direction (the runtime's TokenUsage has each). */
type TokenCounts = Record<"input" | "output" | "cached" | "reasoning", number>;

/**
 * What runs are counted by: every span started and event appended, by kind, and model usage
 * recorded. The runtime's trace decorator (runtime/trace-metrics) calls these; the metrics know
 * nothing of the runtime.
 */
export type TraceCounters = {
  countSpan(kind: string): void;
  countEvent(kind: string): void;
  countTokens(usage: TokenCounts): void;
};

export type DossierMetrics = TraceCounters & {
  /** The Content-Type of `render()`'s text (the Prometheus text format 0.0.4). */
  readonly contentType: string;
  /** The exposition text of this app's instruments; runs by state are read from the database now. */
  render(): Promise<string>;
  /** An HTTP request answered (labels in the order they are exposed). */
  observeRequest(labels: { method: string; route: string; status: string }, seconds: number): void;
  /** A GraphQL operation executed (subscriptions: until their first result). */
  observeOperation(labels: { outcome: "ok" | "error"; type: string }, seconds: number): void;
  /** A request refused by a limit, by its error code. */
  countRejected(reason: string): void;
  /** An SSE subscription opened (+1) or ended (-1). */
  countSseSubscriptions(delta: 1 | -1): void;
  /** A promise of this process rejected with no handler (logged; the process keeps serving). */
  countUnhandledRejection(): void;
  /** Adds a count of open WebSocket subscriptions read at every scrape; returns its remover. */
  countWsSubscriptions(count: () => number): () => void;
};

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUN_STATES = ["QUEUED", "RUNNING", "WAITING", "PAUSED", "SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"] as const;
const DIRECTIONS = ["input", "output", "cached", "reasoning"] as const;

/** The metrics of one app; `prisma` is the database its runs-by-state gauge reads. */
export function createMetrics({ prisma }: { prisma: PrismaClient }): DossierMetrics {
  const registry = new Registry();
  const registers = [registry];
  const httpDuration = new Histogram({
    name: "dossier_http_request_duration_seconds",
    help: "HTTP requests by method, route and status.",
    labelNames: ["method", "route", "status"] as const,
    buckets: SECONDS,
    registers,
  });
  const graphqlDuration = new Histogram({
    name: "dossier_graphql_operation_duration_seconds",
    help: "GraphQL operations executed (queries, mutations; subscriptions until their first result) by type and outcome.",
    labelNames: ["outcome", "type"] as const,
    buckets: SECONDS,
    registers,
  });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => new Counter<L>({ name, help, labelNames, registers });
  const rejected = counter(
    "dossier_graphql_rejected_total",
    "GraphQL requests refused by a limit (depth, aliases, tokens, cost, body size, batch) or for an untrusted document, and responses that left texts out past MAX_RESPONSE_BYTES (RESPONSE_TOO_LARGE).",
    ["reason"],
  );
  const modelTokens = counter("dossier_model_tokens_total", "Model tokens by direction (input, output, cached, reasoning).", ["direction"]);
  const modelCalls = counter("dossier_model_calls_total", "Model requests made by runs.");
  const toolCalls = counter("dossier_tool_calls_total", "Tool calls executed by runs.");
  const compactions = counter("dossier_compactions_total", "Model requests whose context was compacted (COMPACTION trace events).");
  const spills = counter("dossier_spills_total", "Large tool results or bodies spilled out of the context (SPILL trace events).");
  const unhandledRejections = counter(
    "dossier_unhandled_rejections_total",
    "Promises of this process that rejected with no handler (each logged with its stack).",
  );
  const spans = counter("dossier_trace_spans_total", "Trace spans started, by kind.", ["kind"]);
  const events = counter("dossier_trace_events_total", "Trace events recorded, by kind.", ["kind"]);
  const wsCounts = new Set<() => number>();
  const subscriptions = subscriptionsGauge(registers, wsCounts);
  runsGauge(registers, prisma);

  return {
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeRequest: (labels, seconds) => httpDuration.observe(labels, seconds),
    observeOperation: (labels, seconds) => graphqlDuration.observe(labels, seconds),
    countRejected: (reason) => rejected.inc({ reason }),
    countSseSubscriptions: (delta) => (delta > 0 ? subscriptions.inc({ transport: "sse" }) : subscriptions.dec({ transport: "sse" })),
    countUnhandledRejection: () => unhandledRejections.inc(),
    countWsSubscriptions(count) {
      wsCounts.add(count);
      return () => void wsCounts.delete(count);
    },
    countSpan(kind) {
      spans.inc({ kind });
      if (kind === "MODEL_CALL") modelCalls.inc();
      if (kind === "TOOL_CALL") toolCalls.inc();
    },
    countEvent(kind) {
      events.inc({ kind });
      if (kind === "COMPACTION") compactions.inc();
      if (kind === "SPILL") spills.inc();
    },
    countTokens(usage) {
      for (const direction of DIRECTIONS) if (usage[direction] > 0) modelTokens.inc({ direction }, usage[direction]);
    },
  };
}

/** Subscriptions open, by transport: SSE counted as they open and end, WebSocket read from the HTTP servers' counts at scrape time. */
function subscriptionsGauge(registers: Registry[], wsCounts: Set<() => number>): Gauge<"transport"> {
  return new Gauge({
    name: "dossier_subscriptions_open",
    help: "GraphQL subscriptions open on this instance, by transport.",
    labelNames: ["transport"] as const,
    registers,
    collect() {
      // The WebSocket series exists while an HTTP server counts sockets, as SSE's once one opened.
      if (wsCounts.size === 0) this.remove({ transport: "ws" });
      else
        this.set(
          { transport: "ws" },
          [...wsCounts].reduce((sum, count) => sum + count(), 0),
        );
    },
  });
}

/** Runs by state, read from the database at scrape time. */
function runsGauge(registers: Registry[], prisma: PrismaClient): void {
  new Gauge({
    name: "dossier_runs",
    help: "Runs in the deployment by state (read from the database at scrape time).",
    labelNames: ["state"] as const,
    registers,
    async collect() {
      const groups = await prisma.run.groupBy({ by: ["status"], _count: { _all: true } });
      const counts = new Map(groups.map((group) => [group.status as string, group._count._all]));
      for (const state of RUN_STATES) this.set({ state }, counts.get(state) ?? 0);
    },
  });
}
