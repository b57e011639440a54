// Executes one admitted run (R1): model step → action step (parallel tools) → next turn, over
// the conversation's append-only log, until a final reply, a limit, cancellation or the
// deadline. Each turn yields a NextStep; the loop is data, not nested control flow.
import type { Message, PrismaClient, Run } from "../../generated/prisma/client.js";
import { ContextBuilder } from "../memory/context-builder.js";
import { appendToLog, readLog, toChatMessages } from "../memory/conversation-log.js";
import { findDanglingToolCalls, repairNote } from "../memory/repair.js";
import type { ChatMessage, ModelPort, ModelResponse } from "../ports/model.js";
import type { Tool } from "../ports/tool.js";
import type { SpanRef } from "../ports/trace-sink.js";
import type { Spiller } from "../spill/spiller.js";
import { executeToolCalls } from "../tools/execute-tool-calls.js";
import type { PrismaTraceRecorder } from "../trace/prisma-trace-recorder.js";

import { type AgentProfile, toolAllowed } from "../agents.js";

export type { AgentProfile };
export type FailureReason = "MAX_TURNS" | "TOKEN_BUDGET" | "CONTEXT_OVERFLOW" | "MODEL_ERROR";

export type NextStep =
  | { type: "final"; answer: string }
  | { type: "run_again" }
  | { type: "interrupted"; status: StopReason }
  | { type: "failed"; reason: FailureReason; message: string };

export type Outcome = Exclude<NextStep, { type: "run_again" }>;

/** CANCELLED and TIMED_OUT settle the run; HANDED_BACK leaves it for another worker to resume. */
export type StopReason = "CANCELLED" | "TIMED_OUT" | "HANDED_BACK";

/** Why a run's signal was aborted; the worker sets it as the abort reason. */
export class RunStopped extends Error {
  constructor(readonly status: StopReason) {
    super(
      { CANCELLED: "the run was cancelled", TIMED_OUT: "the run reached its deadline", HANDED_BACK: "the worker is stopping" }[status],
    );
  }
}

const stopReasonOf = (signal: AbortSignal): StopReason =>
  signal.reason instanceof RunStopped ? signal.reason.status : "HANDED_BACK";

export type ExecutorDeps = {
  prisma: PrismaClient;
  model: ModelPort;
  recorder: PrismaTraceRecorder;
  profile: (name: string) => AgentProfile;
  /** The tools of one run, given its log so far (for tools whose state lives in the log). */
  tools: (run: Run, runLog: readonly Message[]) => Tool[] | Promise<Tool[]>;
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
  /** Once per execution, after crash repair and before the first turn (also when a run resumes). */
  beforeFirstTurn?(run: Run, root: SpanRef): Promise<void>;
  /** After a model request was answered: the request's span and the log entries it carried verbatim. */
  afterModelRequest?(run: Run, request: { span: SpanRef; carried: ReadonlySet<string>; log: readonly Message[] }): Promise<void>;
}

type Turn = { run: Run; tools: Map<string, Tool>; profile: AgentProfile; root: SpanRef; signal: AbortSignal; index: number };

export class RunExecutor {
  private readonly context: ContextBuilder;

  constructor(private readonly deps: ExecutorDeps) {
    this.context = deps.context ?? new ContextBuilder({ prisma: deps.prisma, model: deps.model, recorder: deps.recorder });
  }

  async execute(run: Run, signal: AbortSignal): Promise<Outcome> {
    const { recorder, model } = this.deps;
    const traceId = await recorder.traceFor(run.id);
    await this.deps.prisma.run.update({ where: { id: run.id }, data: { modelLabel: model.label } });
    const profile = this.deps.profile(run.agent);
    const root = await recorder.startSpan({
      traceId,
      kind: "RUN",
      name: `invoke_agent ${profile.name}`,
      attributes: { "gen_ai.agent.name": profile.name, model: model.label, scripted: model.scripted },
    });
    let outcome: Outcome;
    try {
      const answered = await this.answeredBefore(run);
      if (answered !== null) {
        // The run's final reply is already in the log: a worker died while settling it. The
        // answer stands; asking the model again could publish a different one.
        await recorder.event(root, "FINAL_REPLY", answered);
        await recorder.endSpan(root, { status: "OK" });
        return { type: "final", answer: answered };
      }
      await this.repairDanglingCalls(run, root);
      for (const hooks of this.deps.hooks ?? []) await hooks.beforeFirstTurn?.(run, root);
      const log = await readLog(this.deps.prisma, run.conversationId);
      const offered = await this.deps.tools(run, log.filter((m) => m.runId === run.id));
      const tools = new Map(
        offered.filter((tool) => toolAllowed(profile.tools, tool.schema.name)).map((tool) => [tool.schema.name, tool]),
      );
      let index = log.filter((m) => m.runId === run.id && m.role === "ASSISTANT").length;
      for (;;) {
        const step = await this.turn({ run, tools, profile, root, signal, index });
        if (step.type !== "run_again") {
          outcome = step;
          break;
        }
        index += 1;
      }
    } catch (error) {
      outcome = signal.aborted
        ? { type: "interrupted", status: stopReasonOf(signal) }
        : { type: "failed", reason: "MODEL_ERROR", message: error instanceof Error ? error.message : String(error) };
    }
    await recorder.endSpan(root, {
      status: outcome.type === "final" ? "OK" : outcome.type === "interrupted" ? "CANCELLED" : "ERROR",
      attributes: outcome.type === "failed" ? { failureReason: outcome.reason, error: outcome.message } : {},
    });
    return outcome;
  }

  /** The run's final reply when its last log entry is one (an answer without tool calls), else null. */
  private async answeredBefore(run: Run): Promise<string | null> {
    const last = await this.deps.prisma.message.findFirst({
      where: { conversationId: run.conversationId, runId: run.id },
      orderBy: { seq: "desc" },
      select: { role: true, content: true, toolCalls: true },
    });
    if (last?.role !== "ASSISTANT") return null;
    return ((last.toolCalls as unknown[] | null) ?? []).length === 0 ? last.content : null;
  }

  /** R7: tool calls left without results by a crash get a REPAIR entry before anything else. */
  private async repairDanglingCalls(run: Run, root: SpanRef): Promise<void> {
    const dangling = findDanglingToolCalls(toChatMessages(await readLog(this.deps.prisma, run.conversationId)));
    if (dangling.length === 0) return;
    await appendToLog(this.deps.prisma, {
      conversationId: run.conversationId,
      runId: run.id,
      entries: dangling.map((call) => ({ role: "REPAIR", toolCallId: call.id, toolName: call.name, content: repairNote(call) })),
    });
    await this.deps.recorder.event(root, "REPAIR", { repaired: dangling.map((call) => ({ id: call.id, name: call.name })) });
  }

  private async turn(turn: Turn): Promise<NextStep> {
    const { run, signal } = turn;
    if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal) };
    if (turn.index >= run.maxTurns) return { type: "failed", reason: "MAX_TURNS", message: `the run used all ${run.maxTurns} turns` };
    const span = await this.deps.recorder.startSpan({ traceId: turn.root.traceId, parent: turn.root, kind: "TURN", name: `turn ${turn.index + 1}` });
    try {
      const step = await this.modelAndTools(turn, span);
      await this.deps.recorder.endSpan(span, { status: step.type === "failed" ? "ERROR" : step.type === "interrupted" ? "CANCELLED" : "OK" });
      return step;
    } catch (error) {
      await this.deps.recorder.endSpan(span, { status: signal.aborted ? "CANCELLED" : "ERROR" });
      throw error;
    }
  }

  private async modelAndTools(turn: Turn, span: SpanRef): Promise<NextStep> {
    const { run } = turn;
    const log = await readLog(this.deps.prisma, run.conversationId);
    const { messages, budget, carried } = await this.context.build({
      run,
      log,
      systemPrompt: turn.profile.systemPrompt,
      tools: [...turn.tools.values()].map((tool) => tool.schema),
      span,
      signal: turn.signal,
    });
    await this.deps.recorder.event(span, "BUDGET", budget);
    if (budget.overBudget) {
      return { type: "failed", reason: "CONTEXT_OVERFLOW", message: `the request needs ~${budget.estimate} tokens; ${budget.effectiveWindow} fit` };
    }
    const { response, span: requestSpan } = await this.callModel(turn, span, messages, budget);
    for (const hooks of this.deps.hooks ?? []) await hooks.afterModelRequest?.(run, { span: requestSpan, carried, log });
    const used = response.usage.input + response.usage.output;
    const { tokensUsed } = await this.deps.prisma.run.update({
      where: { id: run.id },
      data: { tokensUsed: { increment: used } },
      select: { tokensUsed: true },
    });
    await appendToLog(this.deps.prisma, {
      conversationId: run.conversationId,
      runId: run.id,
      entries: [{ role: "ASSISTANT", content: response.content, toolCalls: response.toolCalls }],
    });
    if (response.toolCalls.length === 0) {
      await this.deps.recorder.event(span, "FINAL_REPLY", response.content ?? "");
      return { type: "final", answer: response.content ?? "" };
    }
    const results = await executeToolCalls({
      calls: response.toolCalls,
      tools: turn.tools,
      sink: this.deps.recorder,
      parent: span,
      run,
      signal: turn.signal,
      defaultTimeoutMs: this.deps.toolTimeoutMs,
      payloadStep: this.deps.spiller?.forTurn(run),
    });
    await appendToLog(this.deps.prisma, {
      conversationId: run.conversationId,
      runId: run.id,
      entries: results.map((r) => ({ role: "TOOL", toolCallId: r.call.id, toolName: r.call.name, content: r.output, spill: r.spill })),
    });
    if (turn.signal.aborted) return { type: "interrupted", status: stopReasonOf(turn.signal) };
    if (tokensUsed > run.tokenBudget) {
      return { type: "failed", reason: "TOKEN_BUDGET", message: `the run used ${tokensUsed} of ${run.tokenBudget} tokens` };
    }
    return { type: "run_again" };
  }

  private async callModel(
    turn: Turn,
    parent: SpanRef,
    messages: ChatMessage[],
    budget: object,
  ): Promise<{ response: ModelResponse; span: SpanRef }> {
    const { recorder, model } = this.deps;
    const span = await recorder.startSpan({
      traceId: parent.traceId,
      parent,
      kind: "MODEL_CALL",
      name: `chat ${model.label}`,
      attributes: { "gen_ai.request.model": model.label, scripted: model.scripted, budget, request: messages },
    });
    try {
      const response = await model.complete({ messages, tools: [...turn.tools.values()].map((t) => t.schema), signal: turn.signal }, (event) => {
        if (event.type === "reasoning") void recorder.event(span, "THINKING", event.delta);
      });
      await recorder.endSpan(span, {
        status: "OK",
        usage: response.usage,
        attributes: { "gen_ai.response.model": response.model, finishReason: response.finishReason },
      });
      return { response, span };
    } catch (error) {
      await recorder.event(span, "ERROR", error instanceof Error ? error.message : String(error));
      await recorder.endSpan(span, { status: turn.signal.aborted ? "CANCELLED" : "ERROR" });
      throw error;
    }
  }
}
