// Executes one attempt of an admitted run (R1, R18): model step → action step (parallel tools) →
// next turn, over the conversation's append-only log, until a final reply, a limit, a stop or
// the deadline. Each turn yields a NextStep; the loop is data, not nested control flow. Every
// write goes through the attempt's fence — the trace through a fenced recorder, the log and the
// ledger through `write` — so nothing of an attempt that lost its run is applied. The stops that
// end a run with what it has (AFTER_TURN, CONCLUDE) are taken as stops-taken.ts says; a call held
// for a decision never executes once one of them is known (held-stops.ts).
import { budgetTokens, type RunRecord } from "../ports/run-state.js";
import type { AgentProfile } from "../agents.js";
import type { Transact } from "../ports/attempt-fence.js";
import { withRead, within, writeAfter } from "../../domain/transaction.js";
import { AttemptLog } from "../memory/attempt-log.js";
import { ContextBuilder } from "../memory/context-builder.js";
import { ModelRetryLater, type TokenUsage } from "../ports/model.js";
import { deliverSteering, steeringWaits } from "./steering.js";
import type { RunRequests } from "../../domain/runs/run-requests.js";
import type { EndedWith, SpanRef, TraceSink } from "../ports/trace-sink.js";
import { executeToolCalls, type ToolGate } from "../tools/execute-tool-calls.js";
import { answeredBefore, type ApprovalSettings, type HeldStep, heldCallIds, heldStep, inResumedTurn, stepGate } from "./held-calls.js";
import { type HeldStop, heardStop, stopBeforeHeld, unlessStopped } from "./held-stops.js";
import type { FailureReason, NextStep, Outcome } from "./outcome.js";
import { failedSpanStatus, note, stepSpanStatus, withSpan } from "./spans.js";
import { recordRepairs } from "./repairs.js";
import { type ConcludeDeps, conclude, type Stops, stopAfterTurn, unlessConcluding } from "./stops-taken.js";
import { callModel, ModelRequestFailed } from "./model-call.js";
import { callIdsOfRun as callIdsOf } from "./call-ids.js";
import { groupedResults } from "./result-group.js";
import { stoppedSpanStatus, stopReasonOf } from "./stop.js";
import { isTransientDatabaseError } from "../../db/transient-errors.js";
import { checkCostCaps } from "./cost-caps.js";
import type { AttemptContext, AttemptScope, AttemptStart, ExecutorDeps, Turn } from "./attempt.js";
import { caught, settlesAfter, startFirstTurn } from "./attempt-start.js";
import { offeredTools } from "../mcp/mcp-tool-share.js";

export type { AgentProfile, FailureReason, NextStep, Outcome };
export type { AttemptContext, AttemptScope, AttemptStart, ExecutorDeps, RunHooks } from "./attempt.js";

export class RunExecutor {
  private readonly context: ContextBuilder;
  /** What a CONCLUDE stop's one last request, and every model request, is made with (stops-taken.ts, model-call.ts). */
  private readonly concluding: ConcludeDeps;

  constructor(private readonly deps: ExecutorDeps) {
    this.context = deps.context ?? new ContextBuilder({ model: deps.model });
    this.concluding = { ...deps, context: this.context };
    this.modelLabel = deps.model.label;
  }

  /** The model the attempts ask: a claim records it on the runs it takes, and an attempt whose run shows it records it no more. */
  readonly modelLabel: string;

  /** The name and attributes of a run's RUN span. */
  describeRun(run: RunRecord): { name: string; attributes: Record<string, unknown> } {
    const { model } = this.deps;
    return { name: `invoke_agent ${run.agent}`, attributes: { "gen_ai.agent.name": run.agent, model: model.label, scripted: model.scripted } };
  }

  async execute(attempt: AttemptContext): Promise<Outcome> {
    const sink = this.deps.recorder.fenced(attempt.fence);
    const ended = new AbortController();
    try {
      const outcome = await this.attempt(attempt, sink, ended.signal);
      if (settlesAfter(attempt, sink, outcome)) return outcome;
      try {
        // Else its trace is written before it settles (which ends its open spans); a failed write stops the attempt, as any does.
        await sink.flushed?.();
      } catch (error) {
        return this.failure(error, attempt.signal, { text: (outcome.type === "interrupted" && outcome.partialAnswer) || "" });
      }
      return outcome;
    } finally {
      ended.abort();
    }
  }

  private async attempt(attempt: AttemptContext, sink: TraceSink, ended: AbortSignal): Promise<Outcome> {
    const { run, signal } = attempt;
    // The attempt's writes (the log, tokens, steering) go after the trace records made before them:
    // a tool's result is never in the log while its span or its input is missing from the trace.
    // A one-statement write (a tool result's entry) carries the records not yet written instead.
    const write = writeAfter(
      { flushed: () => sink.flushed?.() ?? Promise.resolve(), ...(sink.inOrder && { inOrder: sink.inOrder.bind(sink) }) },
      attempt.fence.write,
    );
    // The work in hand (model requests, tool calls) stops for a CONCLUDE stop too; the attempt does not.
    const work = attempt.conclude ? AbortSignal.any([signal, attempt.conclude]) : signal;
    const streamed = { text: "" };
    const stops: Stops = { attempt, concluding: false };
    let current: Turn | undefined;
    try {
      // The attempt's start reads what it needs at once, not one after the other: each is a round
      // trip between the claim and the first model request (dispatch). The run's requests are
      // read with them for the first turn (a stop asked meanwhile is also heard announced).
      // The model calls made before this attempt's are unknown to it unless it is the run's first.
      const start: AttemptStart = { run, span: attempt.span, sink, write, signal: work, ended, modelCalls: { last: attempt.number === 1 ? null : undefined } };
      const firstTurn = await startFirstTurn(this.deps, start);
      // What the claim already read or wrote is not read again: a first attempt's requests, and its
      // log when it is the question alone; a first attempt has no decisions asked (no call of its run was made).
      const [, log, approvals, profile, firstRequests, callIdsLeftOut] = await Promise.all([
        run.modelLabel === this.modelLabel ? undefined : this.deps.runs.recordModel(write, run.id, this.modelLabel),
        attempt.log ? AttemptLog.known(this.deps.log, run, attempt.log) : AttemptLog.open(this.deps.log, run, attempt.lineage),
        attempt.number === 1 ? [] : (this.deps.approvals?.store.ofRun(run.id) ?? []),
        this.deps.profile(run),
        attempt.requests ?? this.deps.runs.requests(run.id),
        attempt.number === 1 ? [] : (this.deps.callIdsLeftOut?.(run.id) ?? []),
      ]);
      const scope: AttemptScope = { ...start, log };
      const answered = answeredBefore(log);
      if (answered !== null) {
        // The run's final reply is already in the log: an attempt died while settling it. The
        // answer stands; asking the model again could publish a different one.
        await scope.sink.event(scope.span, "FINAL_REPLY", answered);
        return { type: "final", answer: answered };
      }
      await recordRepairs(scope, heldCallIds(approvals));
      // MCP tools past their share of the context window are not offered (mcp-tool-share.ts).
      const tools = await offeredTools(await firstTurn(scope, profile), this.context, sink, attempt.span);
      const index = log.ofRun().filter((m) => m.role === "ASSISTANT").length;
      const turn: Turn = { scope, tools, profile, index, streamed, approvals, callIdsLeftOut, steered: attempt.steered };
      current = turn;
      const held = heldStep(log.ofRun(), approvals);
      if (held) {
        // The step an earlier attempt left waiting for decisions goes on where it stopped — unless an
        // AFTER_TURN or CONCLUDE stop is known before it begins: then none of its calls executes, each
        // is answered so, and the stop is taken (held-stops.ts). Only NOW or the deadline stops that step.
        const before = stopBeforeHeld(firstRequests.stop, attempt);
        const resumed: Turn = before ? { ...turn, scope: { ...scope, signal } } : turn;
        const stopped = () => before ?? heardStop(attempt);
        const step = await inResumedTurn(resumed.scope, turn.index, (span) => this.actionStep(resumed, span, { ...held, approvals }, stopped));
        if (before && step.type === "run_again") return before === "AFTER_TURN" ? await stopAfterTurn(turn) : await conclude(this.concluding, stops, turn);
        if (step.type !== "run_again") return await unlessConcluding(this.concluding, stops, turn, step);
      }
      // A pause is taken at a safe point: after a turn (or the resumed step), its model request and
      // tool calls over and every result logged — never before the attempt's first step.
      let safePoint = Boolean(held);
      // Read with the attempt's start, unless a resumed step ran since.
      let requests: RunRequests | undefined = held ? undefined : firstRequests;
      for (;;) {
        // A stop or a pause asked for (on any instance), and whether steering inputs wait, are read
        // before every model request, in one read: the run row and its inputs are their one record.
        const { stop, pause, inputs, costs } = requests ?? (await (turn.nextRequests ?? this.deps.runs.requests(run.id)));
        requests = undefined;
        turn.nextRequests = undefined;
        turn.inputsPending = inputs;
        turn.costs = costs;
        // An AFTER_TURN stop heard since they were read (with the claim, for a first turn) counts too.
        if (stop === "AFTER_TURN" || attempt.afterTurn?.aborted) return await stopAfterTurn(turn);
        if (stop === "CONCLUDE" || attempt.conclude?.aborted) return await conclude(this.concluding, stops, turn);
        if (pause && safePoint) return PAUSED;
        const step = await this.turn(turn);
        if (step.type !== "run_again") return await unlessConcluding(this.concluding, stops, turn, step);
        turn.index += 1;
        safePoint = true;
      }
    } catch (error) {
      // The work in hand was stopped for a CONCLUDE stop: the attempt concludes (once).
      if (!signal.aborted && current && attempt.conclude?.aborted && !stops.concluding) {
        return conclude(this.concluding, stops, current).catch((again: unknown) => this.failure(again, signal, streamed));
      }
      return this.failure(error, signal, streamed);
    }
  }

  /** The outcome of an attempt that threw; a stop NOW keeps the text its model had streamed. */
  private failure(error: unknown, signal: AbortSignal, streamed: { text: string }): Outcome {
    if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal), ...(streamed.text && { partialAnswer: streamed.text }) };
    // The model endpoint is busy past the adapter's retries: another attempt resumes the run later.
    const busy = [error, (error as Error | undefined)?.cause].find((e) => e instanceof ModelRetryLater);
    if (busy) return { type: "interrupted", status: "HANDED_BACK", retryAfterMs: busy.retryAfterMs };
    const message = error instanceof Error ? error.message : String(error);
    // The model's own failure (its server unreachable included) is the run's, never the database's.
    if (error instanceof ModelRequestFailed) return { type: "failed", reason: "MODEL_ERROR", message };
    // The database failed, not the run: its state is intact and another attempt resumes it.
    if (isTransientDatabaseError(error)) return { type: "interrupted", status: "HANDED_BACK", databaseFailed: message };
    return { type: "failed", reason: "INTERNAL_ERROR", message };
  }

  private async turn(turn: Turn): Promise<NextStep> {
    const { run, signal, sink } = turn.scope;
    if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal) };
    if (turn.index >= run.maxTurns) return { type: "failed", reason: "MAX_TURNS", message: `the run used all ${run.maxTurns} turns` };
    return withSpan(
      sink,
      { traceId: turn.scope.span.traceId, parent: turn.scope.span, kind: "TURN", name: `turn ${turn.index + 1}` },
      (span) => this.modelAndTools(turn, span),
      {
        ended: (step) => ({ status: stepSpanStatus(step, stoppedSpanStatus(signal)) }),
        failed: () => ({ status: failedSpanStatus(signal) }),
      },
    );
  }

  private async modelAndTools(turn: Turn, span: SpanRef): Promise<NextStep> {
    const { run, sink, write, signal, log } = turn.scope;
    // A person's steering inputs enter the log right before the request that reads them (issue 38).
    if (steeringWaits(turn)) await deliverSteering(this.deps.runs, turn.scope, span);
    const entries = log.entries;
    const { messages, budget, carried, recorded } = await this.context.build({
      run,
      log: entries,
      appendSummary: (content) => log.append(write, [{ role: "SUMMARY", content }]),
      addTokens: (usage) => this.deps.runs.addTokens(write, run.id, usage),
      systemPrompt: turn.profile.systemPrompt,
      tools: [...turn.tools.values()].map((tool) => tool.schema),
      span,
      sink,
      signal,
    });
    await note(sink, span, "BUDGET", budget);
    if (budget.overBudget) {
      return { type: "failed", reason: "CONTEXT_OVERFLOW", message: `the request needs ~${budget.estimate} tokens; ${budget.effectiveWindow} fit` };
    }
    const callIdsOfRun = (turn.callIds ??= callIdsOf(log.ofRun(), turn.approvals, turn.callIdsLeftOut));
    const caps = { run, costs: turn.costs, model: this.deps.model.model, budget, span, sink, write, runLog: log.ofRun(), callIdsOfRun };
    const capped = await checkCostCaps({ bounds: this.deps.costs, approvals: this.deps.approvals }, caps);
    if (capped.step) return capped.step;
    turn.streamed.text = "";
    const countUsage = (usage: TokenUsage) => this.deps.runs.addTokens(write, run.id, usage);
    const request = { messages, recorded, maxOutputTokens: capped.maxOutputTokens, callIdsOfRun, countUsage };
    // The request's span ends (priced, charged) in the transaction that logs its reply.
    const endsWithReply = sink.endSpanWith?.bind(sink);
    const {
      response,
      span: requestSpan,
      ending,
      streamedCallIds,
    } = await callModel(this.concluding, turn, span, request, budget, turn.streamed, Boolean(endsWithReply));
    // The reply is complete (and logged next): nothing of it is partial any more.
    turn.streamed.text = "";
    // Every call the reply streamed is named on runOutput by its id, the ones the bound left out of it too:
    // none of them names a later call of the run.
    for (const id of streamedCallIds) callIdsOfRun.add(id);
    try {
      for (const hooks of this.deps.hooks ?? []) await hooks.afterModelRequest?.(turn.scope, { span: requestSpan, carried, log: entries });
    } catch (error) {
      // The request was made: its span ends, and its cost is charged, whatever failed after it.
      if (endsWithReply) await sink.endSpan(requestSpan, ending);
      throw error;
    }
    // The reply's tokens and its log entry are written together, with the span's end (its charge adds the tokens): one statement.
    const logReply = async (into: Transact, ended?: EndedWith) => {
      const added = ended?.addsTokens ? null : await this.deps.runs.addTokens(into, run.id, response.usage);
      const [entry] = await log.append(into, [{ role: "ASSISTANT", content: response.content, toolCalls: response.toolCalls }]);
      return { tokensUsed: added ?? ended?.tokensUsed ?? 0, reply: entry };
    };
    const tokens = budgetTokens(response.usage);
    const { tokensUsed, reply } = await (endsWithReply
      ? endsWithReply(requestSpan, { ...ending, tokens }, logReply)
      : write((tx, after) => logReply(within(tx, after))));
    if (response.toolCalls.length === 0) {
      // The reply is the log entry's content: the event refers to it rather than copying it.
      await note(sink, span, "FINAL_REPLY", response.content ?? "", { messageId: reply?.id });
      return { type: "final", answer: response.content ?? "" };
    }
    const step = await this.actionStep(turn, span, { calls: response.toolCalls, messageId: reply!.id, approvals: [] });
    if (step.type !== "run_again") return step;
    // Every call is over and logged: the next turn's read of the run's requests was made with the last result's entry, or goes now.
    turn.nextRequests ??= caught(this.deps.runs.requests(run.id));
    if (tokensUsed > run.tokenBudget) {
      return { type: "failed", reason: "TOKEN_BUDGET", message: `the run used ${tokensUsed} of ${run.tokenBudget} tokens` };
    }
    return { type: "run_again" };
  }

  /**
   * The action step (R16): the calls run concurrently, within the limits, each result logged as it is known.
   * Calls that wait for a person's decision get no result; once the others have settled, the run waits.
   */
  private async actionStep(turn: Turn, span: SpanRef, step: HeldStep, stopped?: () => HeldStop | null): Promise<NextStep> {
    const { run, sink, write, signal, log } = turn.scope;
    // The results known together are logged together; the last carries the next turn's read of the run's requests
    // (every call's work is done; a stop or a charge made since is read as one made after it), or it goes alone later.
    const logResults = groupedResults(step.calls.length, (entries, last) => {
      const next = last ? this.deps.runs.carriedRequests(run.id) : undefined;
      const logged = log.append(next ? withRead(write, next.read) : write, entries);
      if (next) turn.nextRequests = caught(logged.then(() => next.value() ?? this.deps.runs.requests(run.id)));
      return logged;
    });
    const results = await executeToolCalls({
      calls: step.calls,
      tools: turn.tools,
      sink,
      write,
      parent: span,
      run,
      signal,
      defaultTimeoutMs: this.deps.toolTimeoutMs,
      limits: this.deps.toolCallLimits,
      logger: this.deps.logger,
      payloadStep: this.deps.spiller?.forTurn(run, sink),
      logResult: ({ call, output, spill }) => logResults({ role: "TOOL", toolCallId: call.id, toolName: call.name, content: output, spill }),
      gate: this.deps.approvals && this.gate(this.deps.approvals, turn, step, stopped),
    });
    if (signal.aborted) return { type: "interrupted", status: stopReasonOf(signal) };
    const waiting = results.filter((result) => result.pending).map((result) => result.call.id);
    return waiting.length > 0 ? { type: "waiting", toolCallIds: waiting } : { type: "run_again" };
  }

  /** The gate of a step's calls; a held step's declines its calls once a stop is known (held-stops.ts). */
  private gate(approvals: ApprovalSettings, turn: Turn, step: HeldStep, stopped?: () => HeldStop | null): ToolGate {
    const gate = stepGate(approvals, { ...turn.scope, profile: turn.profile, tools: turn.tools }, step);
    return stopped ? unlessStopped(gate, step, stopped, turn.scope.sink) : gate;
  }
}

const PAUSED: Outcome = { type: "interrupted", status: "PAUSED" };
