// What an attempt of a run is made of, as the worker hands it to the executor (AttemptContext),
// what the parts of the runtime taking part in it write through (AttemptScope), a turn as the
// executor holds it (Turn), what the executor is built from (ExecutorDeps) and the fixed points
// where extensions take part (RunHooks).
import type { LineageLevel } from "../../domain/research/conversation-lineage.js";
import type { RunRequests } from "../../domain/runs/run-requests.js";
import type { AgentProfile } from "../agents.js";
import type { AttemptLog } from "../memory/attempt-log.js";
import type { ContextBuilder } from "../memory/context-builder.js";
import type { Holder, Transact } from "../ports/attempt-fence.js";
import type { Ahead } from "../../domain/transaction.js";
import type { CostState } from "../../domain/costs/caps.js";
import type { ConversationLog, LoggedMessage } from "../ports/conversation-log.js";
import type { ModelPort } from "../ports/model.js";
import type { RunOutput } from "../ports/run-output.js";
import type { RunRecord, RunState } from "../ports/run-state.js";
import type { Tool } from "../ports/tool.js";
import type { RuntimeTrace, SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { Spiller } from "../spill/spiller.js";
import type { ToolCallLimits } from "../tools/execute-tool-calls.js";
import type { CostBounds } from "./cost-caps.js";
import type { Logger } from "../../logger.js";
import type { ModelCallsOfAttempt } from "./model-call.js";
import type { ApprovalSettings } from "./held-calls.js";

/** One claim of a run, as the worker hands it to the executor. */
export type AttemptContext = {
  run: RunRecord;
  /** The attempt's number (1 for the first claim). */
  number: number;
  /** The run's RUN span and this attempt's ATTEMPT span under it (turns go under the attempt). */
  root: SpanRef;
  span: SpanRef;
  /** `writesAfter`: the attempt's settle goes after the trace records still queued when its work is over, carrying them (AttemptFence). */
  fence: { write: Transact; holder: Holder; writesAfter?(ahead: Ahead): void };
  /** The run's conversation's lineage, when the claim read it: the log is then read in one statement. */
  lineage?: readonly LineageLevel[];
  /** The conversation's whole log, when the claim knows it (the run's question alone): the attempt does not read it. */
  log?: readonly LoggedMessage[];
  /** The run's requests, when the claim read them (a first attempt's): its first turn does not read them. */
  requests?: RunRequests;
  /** Aborted when the run is cancelled, reaches its deadline, the worker stops or the lease is lost. */
  signal: AbortSignal;
  /**
   * Aborted when a CONCLUDE stop is heard (announced, or found by a lease renewal): the model
   * request and tool calls in hand stop, and the attempt makes its one concluding request.
   */
  conclude?: AbortSignal;
  /**
   * Aborted when an AFTER_TURN stop is heard (announced, or found by a lease renewal): the attempt
   * makes no model request after it, even one its requests, read before the stop, would allow
   * (its first, when they were read with its claim).
   */
  afterTurn?: AbortSignal;
  /**
   * Whether a steering input of the run was heard announced (steerRun, on any instance) since this
   * was last asked: the next model request delivers the run's pending inputs, even when its
   * requests, read before the input was stored (with the claim, for a first request), said none waited.
   */
  steered?: () => boolean;
};

/**
 * What the parts of the runtime taking part in an attempt write through: the attempt's trace,
 * its fenced transaction, and the conversation's log as the attempt holds it (appended to
 * through `log`, so later turns see the entries without reading the log again).
 */
export type AttemptScope = {
  run: RunRecord;
  span: SpanRef;
  sink: TraceSink;
  write: Transact;
  signal: AbortSignal;
  /** Aborts once the attempt is over: what it held for its whole execution (its MCP connections) is released. */
  ended?: AbortSignal;
  log: AttemptLog;
  /** The run's last model call, told to runOutput subscribers with each call's output (ModelCallsOfAttempt). */
  modelCalls?: ModelCallsOfAttempt;
};

/**
 * The attempt as it stands right after its claim, its log not read yet: what the reads that do not
 * need the log start from, beside the attempt's opening reads (one round trip less before the
 * first model request).
 */
export type AttemptStart = Omit<AttemptScope, "log">;

/** One turn of an attempt as the executor holds it. `streamed`: the text of the model reply in hand, as it streams (kept as a partial answer by a stop NOW). */
export type Turn = {
  scope: AttemptScope;
  tools: Map<string, Tool>;
  profile: AgentProfile;
  index: number;
  streamed: { text: string };
  /** Steering inputs waited when the run's requests were last read: the turn delivers them first. */
  inputsPending?: boolean;
  /** Whether a steering input was heard announced since last asked (AttemptContext.steered): the turn delivers it too. */
  steered?: () => boolean;
  /** The run's cost caps and spends as last read, checked before the turn's model request. */
  costs?: CostState;
  /** The run's requests, read as soon as the turn's calls were over (the next turn's read). */
  nextRequests?: Promise<RunRequests>;
  /** The run's approval requests as the attempt began (one made since is for a logged call, or ends the attempt): their ids are the run's. */
  approvals: readonly { toolCallId: string }[];
  /** The ids of calls earlier attempts' replies streamed and left out (call-ids.ts CALL_IDS_LEFT_OUT): the run's too. */
  callIdsLeftOut?: readonly string[];
  /** The call ids the run used (call-ids.ts): read from the log once an attempt, then kept up with each reply's calls. */
  callIds?: Set<string>;
};

/** What an attempt's tools are built with once its log and profile are read. */
export type ToolsOfAttempt = (runLog: readonly LoggedMessage[], profile: AgentProfile) => Promise<Tool[]>;

export type ExecutorDeps = {
  model: ModelPort;
  recorder: RuntimeTrace;
  /** The conversations' logs (R3). */
  log: ConversationLog;
  /** The run row: the model it uses, the tokens it spent, the steering inputs it delivers, and the stop or pause asked of it. */
  runs: Pick<RunState, "recordModel" | "addTokens" | "deliverInputs" | "requests" | "carriedRequests">;
  /** The profile the run executes: the version frozen at its admission. */
  profile: (run: RunRecord) => Promise<AgentProfile>;
  /**
   * The tools of one attempt: called right after the claim (their reads start then, beside the
   * attempt's opening reads), then given the run's log so far (for tools whose state lives in the
   * log) and its profile (whose skill list selects what load_skill offers).
   */
  tools: (start: AttemptStart) => ToolsOfAttempt;
  toolTimeoutMs: number;
  /** How many calls of one reply execute, and how many at once (tools/execute-tool-calls.ts); its defaults without it. */
  toolCallLimits?: ToolCallLimits;
  /** The payload step: spills results too large for the model's context (R10). */
  spiller?: Spiller;
  /** Extensions that take part in every run (workspace materials, …). */
  hooks?: RunHooks[];
  /** The ids of calls the run's replies streamed and left out, as stored (adapters/prisma-call-ids-left-out.ts): read by an attempt that resumes a run. */
  callIdsLeftOut?: (runId: string) => Promise<readonly string[]>;
  /** Builds each model request from the log (R4–R8); by default with the default compaction policies. */
  context?: ContextBuilder;
  /** Human approval of tool calls; without it every call executes at once. */
  approvals?: ApprovalSettings;
  /** Where model output is reported while it streams, for live subscribers (runOutput). */
  output?: RunOutput;
  /** Prices the bound of each model request for the cost caps; without it no cost cap is checked. */
  costs?: CostBounds;
  /** Where a built-in tool's unexpected failure is written in full. */
  logger?: Logger;
};

/** A part of the runtime that takes part in each run at fixed points. */
export interface RunHooks {
  /**
   * Once per attempt (also when a run resumes): called right after the claim, it starts the reads
   * that need no log beside the attempt's opening reads, and returns what runs before the first
   * turn once the log is read. A failure of those reads surfaces there, not before.
   */
  beforeFirstTurn?(start: AttemptStart): (scope: AttemptScope) => Promise<void>;
  /** After a model request was answered: the request's span and the log entries it carried verbatim. */
  afterModelRequest?(scope: AttemptScope, request: { span: SpanRef; carried: ReadonlySet<string>; log: readonly LoggedMessage[] }): Promise<void>;
}
