// Executes one attempt of an admitted run (R1, R18): model step → action step (parallel tools) →
// next turn, over the conversation's append-only log, until a final reply, a limit, a stop or
// the deadline. Each turn yields a NextStep; the loop is data, not nested control flow. Every
// write goes through the attempt's fence — the trace through a fenced recorder, the log and the
// ledger through `write` — so nothing of an attempt that lost its run is applied.
import type { Message, PrismaClient, Run } from "../../generated/prisma/client.js";
import { allowedBy } from "../../domain/capabilities/agent-profile-versions.js";
import type { AgentProfile } from "../agents.js";
import type { Holder, Transact } from "../attempt/fence.js";
import { ContextBuilder } from "../memory/context-builder.js";
import { appendToLog, readLog, unrecordedInterruptions } from "../memory/conversation-log.js";
import { repairNote } from "../memory/repair.js";
import type { ChatMessage, ModelPort, ModelResponse } from "../ports/model.js";
import type { Tool } from "../ports/tool.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { Spiller } from "../spill/spiller.js";
import { executeToolCalls } from "../tools/execute-tool-calls.js";
import type { PrismaTraceRecorder } from "../trace/prisma-trace-recorder.js";
import { forModel, fromStored } from "../../domain/text/stored-text.js";
import type { RecordedMessage } from "../../domain/trace/recorded-request.js";
import { type StopReason, stoppedSpanStatus, stopReasonOf } from "./stop.js";
import { toolCallsOf } from "../../domain/json-columns.js";

export type { AgentProfile };
/** Why a run failed: a limit, the model's request, or Dossier itself (INTERNAL_ERROR: a bug or the database). */
export type FailureReason = "MAX_TURNS" | "TOKEN_BUDGET" | "CONTEXT_OVERFLOW" | "MODEL_ERROR" | "INTERNAL_ERROR";

/** The model's request failed (as opposed to anything Dossier did around it). */
class ModelRequestFailed extends Error {
  override name = "ModelRequestFailed";
}

export type NextStep =
  | { type: "final"; answer: string }
  | { type: "run_again" }
  | { type: "interrupted"; status: StopReason }
  | { type: "failed"; reason: FailureReason; message: string };

export type Outcome = Exclude<NextStep, { type: "run_again" }>;

/** One claim of a run, as the worker hands it to the executor. */
export type AttemptContext = {
  run: Run;
  /** The attempt's number (1 for the first claim). */
  number: number;
  /** The run's RUN span and this attempt's ATTEMPT span under it (turns go under the attempt). */
  root: SpanRef;
  span: SpanRef;
  fence: { write: Transact; holder: Holder };
  /** Aborted when the run is cancelled, reaches its deadline, the worker stops or the lease is lost. */
  signal: AbortSignal;
};

/** What the parts of the runtime taking part in an attempt write through. */
export type AttemptScope = { run: Run; span: SpanRef; sink: TraceSink; write: Transact; signal: AbortSignal };

export type ExecutorDeps = {
  prisma: PrismaClient;
  model: ModelPort;
  recorder: PrismaTraceRecorder;
  /** The profile the run executes: the version frozen at its admission. */
  profile: (run: Run) => Promise<AgentProfile>;
  /**
   * The tools of one attempt, given the run's log so far (for tools whose state lives in the log)
   * and its profile (whose skill list selects what load_skill offers).
   */
  tools: (scope: AttemptScope, runLog: readonly Message[], profile: AgentProfile) => Tool[] | Promise<Tool[]>;
  toolTimeoutMs: number;
  /** The payload step: spills results too large for the model's context (R10). */
  spiller?: Spiller;
  /** Extensions that take part in every run (workspace materials, …). */
  hooks?: RunHooks[];
  /** Builds each model request from the log (R4–R8); by default with the default compaction policies. */
  context?: ContextBuilder;
};

/** A part of the runtime that takes part in each run at fixed points. */
export interface RunHooks {
  /** Once per attempt, before the first turn (also when a run resumes). */
  beforeFirstTurn?(scope: AttemptScope): Promise<void>;
  /** After a model request was answered: the request's span and the log entries it carried verbatim. */
  afterModelRequest?(scope: AttemptScope, request: { span: SpanRef; carried: ReadonlySet<string>; log: readonly Message[] }): Promise<void>;
}

type Turn = { scope: AttemptScope; tools: Map<string, Tool>; profile: AgentProfile; index: number };

export class RunExecutor {
  private readonly context: ContextBuilder;

  constructor(private readonly deps: ExecutorDeps) {
    this.context = deps.context ?? new ContextBuilder({ model: deps.model });
  }

  /** The name and attributes of a run's RUN span. */
  describeRun(run: Run): { name: string; attributes: Record<string, unknown> } {
    const { model } = this.deps;
    return { name: `invoke_agent ${run.agent}`, attributes: { "gen_ai.agent.name": run.agent, model: model.label, scripted: model.scripted } };
  }

  async execute(attempt: AttemptContext): Promise<Outcome> {
    const { run, signal } = attempt;
    const scope: AttemptScope = { run, span: attempt.span, sink: this.deps.recorder.fenced(attempt.fence), write: attempt.fence.write, signal };
    try {
      await scope.write((tx) => tx.run.update({ where: { id: run.id }, data: { modelLabel: this.deps.model.label } }));
      const answered = await this.answeredBefore(run);
      if (answered !== null) {
        // The run's final reply is already in the log: an attempt died while settling it. The
        // answer stands; asking the model again could publish a different one.
        await scope.sink.event(scope.span, "FINAL_REPLY", answered);
        return { type: "final", answer: answered };
      }
      await this.recordRepairs(scope);
      for (const hooks of this.deps.hooks ?? []) await hooks.beforeFirstTurn?.(scope);
      const log = await readLog(this.deps.prisma, run.conversationId);
      const profile = await this.deps.profile(run);
      const offered = await this.deps.tools(scope, log.filter((m) => m.runId === run.id), profile);
      const tools = new Map(
        offered.filter((tool) => allowedBy(profile.tools, tool.schema.name)).map((tool) => [tool.schema.name, tool]),
      );
      let index = log.filter((m) => m.runId === run.id && m.role === "ASSISTANT").length;
      for (;;) {
        const step = await this.turn({ scope, tools, profile, index });
        if (step.type !== "run_again") return step;
        index += 1;
      }
    } catch (error) {
      if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal) };
      const message = error instanceof Error ? error.message : String(error);
      return { type: "failed", reason: error instanceof ModelRequestFailed ? "MODEL_ERROR" : "INTERNAL_ERROR", message };
    }
  }

  /** The run's final reply when its last log entry is one (an answer without tool calls), else null. */
  private async answeredBefore(run: Run): Promise<string | null> {
    const last = await this.deps.prisma.message.findFirst({
      where: { conversationId: run.conversationId, runId: run.id },
      orderBy: { seq: "desc" },
      select: { role: true, content: true, toolCalls: true },
    });
    if (last?.role !== "ASSISTANT") return null;
    return (toolCallsOf(last.toolCalls) ?? []).length === 0 ? fromStored(last.content) : null;
  }

  /**
   * R7: tool calls left without results by an interrupted attempt are recorded as repaired, once.
   * The model's view places each neutral note right after its call (memory/repair.ts); this entry
   * is the log's record that the call was interrupted.
   */
  private async recordRepairs(scope: AttemptScope): Promise<void> {
    const { run } = scope;
    const dangling = unrecordedInterruptions(await readLog(this.deps.prisma, run.conversationId));
    if (dangling.length === 0) return;
    await appendToLog(scope.write, {
      conversationId: run.conversationId,
      runId: run.id,
      entries: dangling.map((call) => ({ role: "REPAIR", toolCallId: call.id, toolName: call.name, content: repairNote(call) })),
    });
    await scope.sink.event(scope.span, "REPAIR", { repaired: dangling.map((call) => ({ id: call.id, name: call.name })) });
  }

  private async turn(turn: Turn): Promise<NextStep> {
    const { run, signal, sink } = turn.scope;
    if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal) };
    if (turn.index >= run.maxTurns) return { type: "failed", reason: "MAX_TURNS", message: `the run used all ${run.maxTurns} turns` };
    const span = await sink.startSpan({ traceId: turn.scope.span.traceId, parent: turn.scope.span, kind: "TURN", name: `turn ${turn.index + 1}` });
    try {
      const step = await this.modelAndTools(turn, span);
      await sink.endSpan(span, { status: step.type === "failed" ? "ERROR" : step.type === "interrupted" ? stoppedSpanStatus(signal) : "OK" });
      return step;
    } catch (error) {
      await sink.endSpan(span, { status: signal.aborted ? stoppedSpanStatus(signal) : "ERROR" });
      throw error;
    }
  }

  private async modelAndTools(turn: Turn, span: SpanRef): Promise<NextStep> {
    const { run, sink, write, signal } = turn.scope;
    const log = await readLog(this.deps.prisma, run.conversationId);
    const { messages, budget, carried, recorded } = await this.context.build({
      run,
      log,
      systemPrompt: turn.profile.systemPrompt,
      tools: [...turn.tools.values()].map((tool) => tool.schema),
      span,
      sink,
      write,
      signal,
    });
    await sink.event(span, "BUDGET", budget);
    if (budget.overBudget) {
      return { type: "failed", reason: "CONTEXT_OVERFLOW", message: `the request needs ~${budget.estimate} tokens; ${budget.effectiveWindow} fit` };
    }
    const { response, span: requestSpan } = await this.callModel(turn, span, { messages, recorded }, budget);
    for (const hooks of this.deps.hooks ?? []) await hooks.afterModelRequest?.(turn.scope, { span: requestSpan, carried, log });
    const used = response.usage.input + response.usage.output;
    const tokensUsed = await write(async (tx) => {
      const updated = await tx.run.update({ where: { id: run.id }, data: { tokensUsed: { increment: used } }, select: { tokensUsed: true } });
      return updated.tokensUsed;
    });
    const [replyId] = await appendToLog(write, {
      conversationId: run.conversationId,
      runId: run.id,
      entries: [{ role: "ASSISTANT", content: response.content, toolCalls: response.toolCalls }],
    });
    if (response.toolCalls.length === 0) {
      // The reply is the log entry's content: the event refers to it rather than copying it.
      await sink.event(span, "FINAL_REPLY", response.content ?? "", { messageId: replyId });
      return { type: "final", answer: response.content ?? "" };
    }
    await executeToolCalls({
      calls: response.toolCalls,
      tools: turn.tools,
      sink,
      write,
      parent: span,
      run,
      signal,
      defaultTimeoutMs: this.deps.toolTimeoutMs,
      payloadStep: this.deps.spiller?.forTurn(run, sink),
      logResult: async ({ call, output, spill }) => {
        const [id] = await appendToLog(write, {
          conversationId: run.conversationId,
          runId: run.id,
          entries: [{ role: "TOOL", toolCallId: call.id, toolName: call.name, content: output, spill }],
        });
        return id!;
      },
    });
    if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal) };
    if (tokensUsed > run.tokenBudget) {
      return { type: "failed", reason: "TOKEN_BUDGET", message: `the run used ${tokensUsed} of ${run.tokenBudget} tokens` };
    }
    return { type: "run_again" };
  }

  private async callModel(
    turn: Turn,
    parent: SpanRef,
    { messages, recorded }: { messages: ChatMessage[]; recorded: RecordedMessage[] },
    budget: object,
  ): Promise<{ response: ModelResponse; span: SpanRef }> {
    const { model } = this.deps;
    const { sink, signal } = turn.scope;
    const span = await sink.startSpan({
      traceId: parent.traceId,
      parent,
      kind: "MODEL_CALL",
      name: `chat ${model.label}`,
      // The request as references to the log where it carries entries as they are: stored once.
      attributes: { "gen_ai.request.model": model.label, scripted: model.scripted, budget, request: recorded },
    });
    try {
      const response = await model.complete({ messages, tools: [...turn.tools.values()].map((t) => t.schema), signal }, (event) => {
        // Best effort: a delta that cannot be recorded (the attempt was stopped) is dropped.
        if (event.type === "reasoning") sink.event(span, "THINKING", event.delta).catch(() => undefined);
      });
      await sink.endSpan(span, {
        status: "OK",
        usage: response.usage,
        attributes: { "gen_ai.response.model": response.model, finishReason: response.finishReason },
      });
      return { response: withPlainCallIds(response), span };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await sink.event(span, "ERROR", message);
      await sink.endSpan(span, { status: signal.aborted ? stoppedSpanStatus(signal) : "ERROR" });
      throw new ModelRequestFailed(message, { cause: error });
    }
  }
}

/**
 * Tool call ids and names are identifiers the runtime keys on (results, spill handles), not
 * content: a NUL or an unpaired surrogate in them is replaced (␀, U+FFFD) rather than escaped.
 * The arguments and the text stay exactly as the model gave them.
 */
function withPlainCallIds(response: ModelResponse): ModelResponse {
  if (response.toolCalls.every((call) => forModel(call.id) === call.id && forModel(call.name) === call.name)) return response;
  return { ...response, toolCalls: response.toolCalls.map((call) => ({ ...call, id: forModel(call.id), name: forModel(call.name) })) };
}
