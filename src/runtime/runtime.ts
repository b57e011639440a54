// The agent runtime of one instance: executor and worker over the ports it is given — the run
// state, the conversation log, the spill store and the trace — which the composition root
// (compose/core.ts) builds over the database.
import type { CostBounds } from "./loop/cost-caps.js";
import type { Tokenizer } from "./ports/tokenizer.js";
import path from "node:path";
import type { SpillPolicy } from "./spill/spill-policy.js";
import type { EventBus } from "../events/topics.js";
import type { Logger } from "../logger.js";
import { type AgentProfile, agentProfiles, frozenProfiles } from "./agents.js";
import { type ExecutorDeps, RunExecutor, type RunHooks } from "./loop/run-executor.js";
import { ContextBuilder } from "./memory/context-builder.js";
import { type CompactionPolicies, DEFAULT_COMPACTION_POLICIES } from "./memory/micro-compaction.js";
import type { ContextBudget } from "./memory/context-builder.js";
import type { ModelPort } from "./ports/model.js";
import type { RunQueue } from "./ports/run-queue.js";
import type { Tool } from "./ports/tool.js";
import { createReadEvidenceTool } from "./tools/read-evidence.js";
import type { McpRegistry } from "./mcp/mcp-registry.js";
import { SkillCatalog } from "./skills/skill-catalog.js";
import { type CapabilityTools, startCapabilityTools } from "./tools/capability-tools.js";
import { createHttpFetchClient, type FetchSettings } from "./tools/http-fetch.js";
import type { CommandSettings } from "./tools/run-command.js";
import { Spiller } from "./spill/spiller.js";
import { createReadSpillTool } from "./tools/read-spill.js";
import { createSandboxFileTools } from "./tools/sandbox-files.js";
import { type SandboxSettings, type SandboxSpace, sandboxSpace } from "./sandbox-space.js";
import { createTaskListTool } from "./tools/task-list.js";
import type { ConversationLog } from "./ports/conversation-log.js";
import type { RunOutput } from "./ports/run-output.js";
import type { RunState } from "./ports/run-state.js";
import type { SpillStore } from "./ports/spill-store.js";
import type { RuntimeTrace } from "./ports/trace-sink.js";
import { DEFAULT_TOOL_CALL_LIMITS, type ToolCallLimits } from "./tools/execute-tool-calls.js";
import { PeriodicSweep } from "./periodic-sweep.js";
import { RunWorker } from "./worker.js";
import type { SettleContext, SettleStep } from "./ports/run-state.js";
import type { RunAnnouncer } from "../domain/runs/run-announcer.js";
import type { Services } from "../domain/services.js";
import { createListHistoryTool, createSearchHistoryTool } from "./workspace/history-tools.js";
import { createProposeCheckpointTool, createReadMaterialTool } from "./workspace/material-tools.js";
import { consumptionHook, decideProposalsStep, publishAnswerStep } from "./workspace/run-results.js";
import { workspaceContextHook } from "./workspace/workspace-context.js";

export type RuntimeOptions = {
  model: ModelPort;
  /** Each run gets `<sandboxDir>/<runId>` for its file tools. */
  sandboxDir: string;
  /**
   * What one run's sandbox folder may hold and what a write may name (SANDBOX_MAX_*; sandbox-usage.ts),
   * what one principal's folders and every folder may hold together (SANDBOX_MAX_BYTES_PER_PRINCIPAL,
   * SANDBOX_MAX_BYTES_TOTAL; sandbox-ledger.ts), how long a folder is kept after its run ended
   * (SANDBOX_RETENTION_HOURS, 24) and how often that is swept.
   */
  sandbox?: SandboxSettings;
  toolTimeoutMs?: number;
  /** How many calls of one model reply execute (MAX_TOOL_CALLS_PER_REPLY; 64) and how many of them at once (TOOL_MAX_CONCURRENCY; 8). */
  toolCallLimits?: Partial<ToolCallLimits>;
  leaseMs?: number;
  /** The lease's safety margin (RUN_LEASE_MARGIN_MS; see attempt/own-clock.ts). */
  leaseMarginMs?: number;
  concurrency?: number;
  /** Runs one principal may have running across every worker (default: concurrency; see worker.ts). */
  maxRunningPerPrincipal?: number;
  /** How often the worker's lease sweep runs (default leaseMs / 3; see worker.ts). */
  sweepMs?: number;
  /** Ready runs announced across processes (PostgreSQL deployments); without it the worker wakes on the event bus. */
  queue?: RunQueue;
  /** Extra tools offered to every run (tests, integrations). */
  extraTools?: Tool[];
  /** Extra extensions that take part in every run, after the built-in ones (tests, integrations). */
  extraHooks?: RunHooks[];
  /** Configured agent profiles, over the built-in `researcher`. */
  agents?: AgentProfile[];
  /** Micro-compaction policy per tool name ("*": every other tool), over the defaults (R5). */
  compactionPolicies?: CompactionPolicies;
  /** The context budget of every model request (R8); each setting defaults to budget.ts's constant. */
  contextBudget?: ContextBudget;
  /** What the context budget counts tokens with (TOKENIZER); the local estimator without one (R9). */
  tokenizer?: Tokenizer;
  /** The MCP registry of the app (its servers' tools are offered to the owner's runs). */
  mcp?: McpRegistry;
  /** Skills; by default the built-in ones overlaid with the database's. */
  skills?: SkillCatalog;
  /** http_fetch: offered when at least one host is allowed. */
  fetch?: FetchSettings;
  /** run_command: offered only when set (COMMANDS_ALLOWED). */
  commands?: CommandSettings;
  /**
   * This instance as the database knows it (Database.instanceId): its id leases runs, and
   * `isConnected` tells a crashed attempt's instance from a frozen one.
   */
  instance?: { id: string; isConnected: (instance: string) => Promise<boolean> };
  /** Spilling of large tool results: policies by tool name ("*" for all), read maximum, sweep interval. */
  spill?: { policies?: Record<string, Partial<SpillPolicy>>; readMaxBytes?: number; sweepIntervalMs?: number };
  /** How often the content of expired temporary artifacts is freed (W16). */
  artifacts?: { sweepIntervalMs?: number };
  /** How often the trace retention sweep runs (TRACE_RETENTION_SWEEP_INTERVAL_MS, 10 minutes). */
  retention?: { sweepIntervalMs?: number };
  /**
   * Human approval of tool calls: the operator's rules (tool-name pattern → "always" | "never";
   * none by default), how long a request waits for a decision (default 3600 s), and the clock
   * requests are stamped and expired by (tests move it).
   */
  approvals?: { rules?: Record<string, "always" | "never">; timeoutSeconds?: number; now?: () => Date };
  /** The operator's default daily cost limit per principal (DAILY_COST_LIMIT, USD); read with each run's requests. */
  dailyCostLimit?: string;
  /** Prices the bound of each model request for the cost caps (the price table); without it no cost cap is checked. */
  costs?: CostBounds;
};

export type Runtime = {
  spills: SpillStore;
  sweeper: PeriodicSweep;
  /** Frees the content of expired temporary artifacts while the worker runs. */
  artifactSweeper: PeriodicSweep;
  /** Expires the traces due under their retention policies while the worker runs. */
  retentionSweeper: PeriodicSweep;
  /** Removes the sandbox folders of runs that ended SANDBOX_RETENTION_HOURS ago while the worker runs. */
  sandboxSweeper: PeriodicSweep;
  executor: RunExecutor;
  worker: RunWorker;
};

/** The domain services the runtime works through (W6–W11, W16, R5, R13, the agent profiles' versions). */
export type RuntimeServices = Pick<
  Services,
  | "publications"
  | "checkpoints"
  | "artifacts"
  | "workspaces"
  | "history"
  | "ledger"
  | "proposals"
  | "conversations"
  | "agentProfiles"
  | "skills"
  | "toolApprovals"
  | "mcpServers"
  | "retention"
>;

/** What the runtime works over; the composition root builds each. */
export type RuntimeDeps = {
  events: EventBus;
  logger: Logger;
  services: RuntimeServices;
  /** Where runs record their traces (counted by the app's metrics, exported when spans end). */
  trace: RuntimeTrace;
  /** The runs' rows: claims, leases, fenced writes, settling. */
  runs: RunState;
  /** The conversations' append-only logs. */
  log: ConversationLog;
  /** Where large tool results are spilled and read back. */
  spills: SpillStore;
  /**
   * Where model output is reported as it streams (runOutput); it runs while the worker runs (it
   * answers other instances asking for the text of this instance's running calls).
   */
  output: RunOutput & { start(): void; stop(): Promise<void> };
  /** Where runs the worker makes ready again are announced. */
  announcer: RunAnnouncer;
  /** The ids of calls a run's replies streamed and left out, as its trace stores them (ExecutorDeps.callIdsLeftOut). */
  callIdsLeftOut?: (runId: string) => Promise<readonly string[]>;
};

/** What every run's end writes besides the transition itself, in this order (the settle steps). */
export function settleStepsOf(
  services: Pick<Services, "publications" | "ledger" | "checkpoints" | "proposals">,
  spills: Pick<SpillStore, "releaseRun">,
): SettleStep[] {
  const { publications, checkpoints, ledger, proposals } = services;
  return [
    // The answer is published before the proposal is decided: the checkpoint's provenance names it.
    publishAnswerStep({ publications, ledger }),
    decideProposalsStep({ checkpoints, proposals }),
    // Whatever way a run ends, its spill handles are released with its terminal status.
    // (Its calls still waiting for a decision are rejected by the run's end itself: domain/runs/transitions.ts.)
    Object.assign(async ({ tx, run, at }: SettleContext) => void (await spills.releaseRun(run.id, tx, at)), {
      inStatement: () => ({ releaseSpills: true as const }),
    }),
  ];
}

export function createRuntime(
  { events, logger, services, trace, runs, log, spills, output, announcer, callIdsLeftOut }: RuntimeDeps,
  options: RuntimeOptions,
): Runtime {
  const { ledger } = services;
  const sandbox = sandboxSpace({ dir: options.sandboxDir, runs, logger }, options.sandbox);
  const hooks: RunHooks[] = [workspaceContextHook(services), consumptionHook({ ledger }), ...(options.extraHooks ?? [])];
  const settleSteps = settleStepsOf(services, spills);
  const approvals = {
    store: services.toolApprovals,
    rules: options.approvals?.rules,
    timeoutMs: (options.approvals?.timeoutSeconds ?? 3_600) * 1_000,
    now: options.approvals?.now,
    // A step's calls of MCP tools are gated with their servers' requireApproval as stored then.
    mcpServers: services.mcpServers,
  };
  const context = new ContextBuilder({
    model: options.model,
    policies: { ...DEFAULT_COMPACTION_POLICIES, ...options.compactionPolicies },
    budget: options.contextBudget,
    tokenizer: options.tokenizer,
  });
  const executor = new RunExecutor({
    output,
    log,
    runs,
    model: options.model,
    recorder: trace,
    context,
    profile: frozenProfiles(services.agentProfiles, agentProfiles(options.agents)),
    toolTimeoutMs: options.toolTimeoutMs ?? 60_000,
    toolCallLimits: {
      maxPerReply: options.toolCallLimits?.maxPerReply ?? DEFAULT_TOOL_CALL_LIMITS.maxPerReply,
      maxConcurrency: options.toolCallLimits?.maxConcurrency ?? DEFAULT_TOOL_CALL_LIMITS.maxConcurrency,
    },
    hooks,
    // A material read is the content the run was asked to weigh, and the ledger counts it as
    // CONSUMED only when a request carries it whole: it is never replaced by a spill preview.
    // Nor is a page of the history or a search's matches, which the ledger counts as DISCOVERED:
    // the model sees all of what it is recorded as having been shown (both are bounded pages).
    spiller: new Spiller({
      store: spills,
      policies: { read_material: { enabled: false }, list_history: { enabled: false }, search_history: { enabled: false }, ...options.spill?.policies },
    }),
    tools: runTools({ services, spills, sandbox }, options),
    approvals,
    costs: options.costs,
    callIdsLeftOut,
    logger,
  });
  const { sweeper, artifactSweeper, retentionSweeper } = sweepers({ spills, services, logger }, options);
  const sandboxSweeper = sandbox.sweeper;
  const worker = new RunWorker({
    runs,
    workerId: options.instance?.id,
    liveness: options.instance?.isConnected,
    executor,
    events,
    logger,
    leaseMs: options.leaseMs,
    leaseMarginMs: options.leaseMarginMs,
    sweepMs: options.sweepMs,
    concurrency: options.concurrency,
    maxRunningPerPrincipal: options.maxRunningPerPrincipal,
    announcer,
    queue: options.queue,
    settleSteps,
    companions: [sweeper, artifactSweeper, retentionSweeper, sandboxSweeper, sandbox.watcher, output],
    approvals: services.toolApprovals,
    now: options.approvals?.now,
  });
  return { spills, sweeper, artifactSweeper, retentionSweeper, sandboxSweeper, executor, worker };
}

/** The tools a run is offered: the built-ins, the workspace's when it works in one, and its capabilities. */
function runTools(
  { services, spills, sandbox }: { services: RuntimeServices; spills: SpillStore; sandbox: SandboxSpace },
  options: RuntimeOptions,
): ExecutorDeps["tools"] {
  const readMaterial = createReadMaterialTool(services);
  const workspaceTools = [createProposeCheckpointTool(services), createListHistoryTool(services), createSearchHistoryTool(services)];
  const readEvidence = createReadEvidenceTool(services.conversations);
  const readSpill = createReadSpillTool({ store: spills, maxBytes: options.spill?.readMaxBytes ?? 16_384 });
  const capabilities: CapabilityTools = {
    skills: options.skills ?? new SkillCatalog({ skills: services.skills }),
    mcp: options.mcp,
    // One http_fetch client for every run of this runtime: a run's own would keep its sockets open after it.
    fetch: options.fetch && { ...options.fetch, client: options.fetch.client ?? createHttpFetchClient(options.fetch) },
    commands: options.commands,
  };
  return ({ run, sink, signal, ended }) => {
    const sandboxDir = path.join(options.sandboxDir, run.id);
    // One count of the folder per attempt, shared by its file tools and run_command.
    const usage = sandbox.usageOf(run);
    const capabilityTools = startCapabilityTools(capabilities, { run, sandboxDir, usage, sink, signal, ended });
    return async (runLog, profile) => [
      createTaskListTool(runLog),
      readMaterial,
      ...(run.workspaceId ? workspaceTools : []),
      readEvidence,
      readSpill,
      ...createSandboxFileTools(sandboxDir, usage),
      ...(await capabilityTools(profile.skills)),
      ...(options.extraTools ?? []),
    ];
  };
}

/** The background sweeps of an instance that runs a worker: released spill handles, expired artifacts and traces (old sandboxes: sandbox-space.ts). */
function sweepers(
  { spills, services, logger }: { spills: SpillStore; services: RuntimeServices; logger: Logger },
  options: RuntimeOptions,
): Record<"sweeper" | "artifactSweeper" | "retentionSweeper", PeriodicSweep> {
  const sweeper = new PeriodicSweep({
    sweep: () => spills.sweep(),
    intervalMs: options.spill?.sweepIntervalMs ?? 60_000,
    logger,
    swept: "released spill handles of settled runs",
    failed: "sweeping spill handles failed",
  });
  // Every instance that runs a worker sweeps; a sweep is one conditional UPDATE, so instances
  // sweeping at once free each expired artifact once.
  const artifactSweeper = new PeriodicSweep({
    sweep: () => services.artifacts.sweepExpired(),
    intervalMs: options.artifacts?.sweepIntervalMs ?? 300_000,
    logger,
    swept: "freed the content of expired temporary artifacts",
    failed: "sweeping expired artifacts failed",
  });
  // Every instance that runs a worker runs it; the sweep lease lets one at a time do the work
  // (domain/trace/retention/sweep.ts), in short bounded transactions beside live ingestion.
  const retentionSweeper = new PeriodicSweep({
    sweep: async () => (await services.retention.sweep()).expired,
    intervalMs: options.retention?.sweepIntervalMs ?? 600_000,
    logger,
    swept: "expired traces under their retention policies",
    failed: "sweeping expired traces failed",
  });
  return { sweeper, artifactSweeper, retentionSweeper };
}
