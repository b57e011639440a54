// Dossier's instruments, one set per process as Prometheus expects of a scrape target. The
// runtime counts at the points where things happen (the trace recorder sees every model call,
// tool call, compaction and spill); gauges that the database knows better (runs by state) are
// read at scrape time by the collector below.
import type { PrismaClient } from "../generated/prisma/client.js";
import { type Collector, MetricsRegistry } from "./registry.js";

export const metrics = new MetricsRegistry();

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const instruments = {
  httpDuration: metrics.histogram("dossier_http_request_duration_seconds", "HTTP requests by method, route and status.", SECONDS),
  graphqlDuration: metrics.histogram(
    "dossier_graphql_operation_duration_seconds",
    "GraphQL operations executed (queries, mutations; subscriptions until their first result) by type and outcome.",
    SECONDS,
  ),
  graphqlRejected: metrics.counter("dossier_graphql_rejected_total", "GraphQL requests refused by a limit (depth, aliases, tokens, cost, body size, batch)."),
  modelTokens: metrics.counter("dossier_model_tokens_total", "Model tokens by direction (input, output, cached, reasoning)."),
  modelCalls: metrics.counter("dossier_model_calls_total", "Model requests made by runs."),
  toolCalls: metrics.counter("dossier_tool_calls_total", "Tool calls executed by runs."),
  compactions: metrics.counter("dossier_compactions_total", "Model requests whose context was compacted (COMPACTION trace events)."),
  spills: metrics.counter("dossier_spills_total", "Large tool results or bodies spilled out of the context (SPILL trace events)."),
  spans: metrics.counter("dossier_trace_spans_total", "Trace spans started, by kind."),
  events: metrics.counter("dossier_trace_events_total", "Trace events recorded, by kind."),
  subscriptions: metrics.gauge("dossier_subscriptions_open", "GraphQL subscriptions open on this instance, by transport."),
};

/** Called by the trace recorder for every span it starts. */
export function countSpan(kind: string): void {
  instruments.spans.inc({ kind });
  if (kind === "MODEL_CALL") instruments.modelCalls.inc();
  if (kind === "TOOL_CALL") instruments.toolCalls.inc();
}

/** Called by the trace recorder for every event it appends. */
export function countEvent(kind: string): void {
  instruments.events.inc({ kind });
  if (kind === "COMPACTION") instruments.compactions.inc();
  if (kind === "SPILL") instruments.spills.inc();
}

/** The directions a model call's token usage is counted in (the runtime's TokenUsage has each). */
const TOKEN_DIRECTIONS = ["input", "output", "cached", "reasoning"] as const;

/** Called by the trace recorder when a span that used the model (a call, a summary) ends. */
export function countTokens(usage: Record<(typeof TOKEN_DIRECTIONS)[number], number>): void {
  for (const direction of TOKEN_DIRECTIONS) {
    if (usage[direction] > 0) instruments.modelTokens.inc({ direction }, usage[direction]);
  }
}

const RUN_STATES = ["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"] as const;

/** Runs by state in the whole deployment, read from the database at scrape time. */
export function runsByState(prisma: PrismaClient): Collector {
  return async () => {
    const groups = await prisma.run.groupBy({ by: ["status"], _count: { _all: true } });
    const counts = new Map(groups.map((group) => [group.status as string, group._count._all]));
    return RUN_STATES.map((state) => ({
      name: "dossier_runs",
      help: "Runs in the deployment by state (read from the database at scrape time).",
      type: "gauge" as const,
      labels: { state },
      value: counts.get(state) ?? 0,
    }));
  };
}
