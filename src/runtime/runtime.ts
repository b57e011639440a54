// The agent runtime of one instance: trace recorder, executor and worker over one database.
import path from "node:path";
import type { SpillPolicy } from "../config.js";
import type { EventBus } from "../events/topics.js";
import type { PrismaClient } from "../generated/prisma/client.js";
import type { Logger } from "../logger.js";
import { type AgentProfile, agentProfiles, profileIn } from "./agents.js";
import { RunExecutor, type RunHooks } from "./loop/run-executor.js";
import type { ModelPort } from "./ports/model.js";
import type { Tool } from "./ports/tool.js";
import { PrismaSpillStore } from "./spill/prisma-spill-store.js";
import { SpillSweeper } from "./spill/spill-sweeper.js";
import { Spiller } from "./spill/spiller.js";
import { createReadSpillTool } from "./tools/read-spill.js";
import { createSandboxFileTools } from "./tools/sandbox-files.js";
import { createTaskListTool } from "./tools/task-list.js";
import { OtlpHttpExporter, type SpanExporter } from "./trace/otlp-exporter.js";
import { PrismaTraceRecorder } from "./trace/prisma-trace-recorder.js";
import { RunWorker, type SettleStep } from "./worker.js";

export type RuntimeOptions = {
  model: ModelPort;
  /** Each run gets `<sandboxDir>/<runId>` for its file tools. */
  sandboxDir: string;
  toolTimeoutMs?: number;
  leaseMs?: number;
  pollMs?: number;
  concurrency?: number;
  /** Extra tools offered to every run (tests, integrations). */
  extraTools?: Tool[];
  /** Configured agent profiles, over the built-in `researcher`. */
  agents?: AgentProfile[];
  /** OTLP/HTTP collector to export finished spans to (off without it). */
  otlpEndpoint?: string;
  /** Spilling of large tool results: policies by tool name ("*" for all), read maximum, sweep interval. */
  spill?: { policies?: Record<string, Partial<SpillPolicy>>; readMaxBytes?: number; sweepIntervalMs?: number };
};

export type Runtime = {
  recorder: PrismaTraceRecorder;
  spills: PrismaSpillStore;
  sweeper: SpillSweeper;
  executor: RunExecutor;
  worker: RunWorker;
  exporter?: SpanExporter;
};

export function createRuntime(
  { prisma, events, logger }: { prisma: PrismaClient; events: EventBus; logger: Logger },
  options: RuntimeOptions,
): Runtime {
  const exporter = options.otlpEndpoint
    ? new OtlpHttpExporter({ prisma, endpoint: options.otlpEndpoint, logger })
    : undefined;
  const recorder = new PrismaTraceRecorder({ prisma, events, exporter });
  const profiles = agentProfiles(options.agents);
  const hooks: RunHooks[] = [];
  const spills = new PrismaSpillStore(prisma);
  // Whatever way a run ends, its spill handles are released before its terminal status shows.
  const settleSteps: SettleStep[] = [async (run) => void (await spills.releaseRun(run.id))];
  const sweeper = new SpillSweeper({ store: spills, intervalMs: options.spill?.sweepIntervalMs ?? 60_000, logger });
  const readSpill = createReadSpillTool({ store: spills, maxBytes: options.spill?.readMaxBytes ?? 16_384 });
  const executor = new RunExecutor({
    prisma,
    model: options.model,
    recorder,
    profile: (name) => profileIn(profiles, name),
    toolTimeoutMs: options.toolTimeoutMs ?? 60_000,
    hooks,
    spiller: new Spiller({ store: spills, sink: recorder, policies: options.spill?.policies }),
    tools: (run, runLog) => [
      createTaskListTool(runLog),
      readSpill,
      ...createSandboxFileTools(path.join(options.sandboxDir, run.id)),
      ...(options.extraTools ?? []),
    ],
  });
  const worker = new RunWorker({
    prisma,
    executor,
    recorder,
    events,
    logger,
    leaseMs: options.leaseMs,
    pollMs: options.pollMs,
    concurrency: options.concurrency,
    settleSteps,
    companions: [sweeper],
  });
  return { recorder, spills, sweeper, executor, worker, exporter };
}
