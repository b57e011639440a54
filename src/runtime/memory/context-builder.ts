// Builds the messages of one model request from the conversation's log (R4): everything is
// decided at read time, nothing in the log is changed or removed. The budget (R8) drives both
// compression layers: micro-compaction (R5, pure, see context-plan.ts) and, when the request is still
// over the trigger, a structured summary written by the model (R6) that is appended to the log. The
// result says which log entries the request carries verbatim, so that callers can tell what content
// the model actually received (the consumption ledger, W8): compacted and folded entries are not.
import type { RunRecord } from "../ports/run-state.js";
import { resultEvidenceId } from "../../domain/research/evidence.js";
import type { ModelPort, TokenUsage, ToolCall, ToolSchema } from "../ports/model.js";
import { addTokenCounts, MAX_TOKEN_COUNT } from "../../domain/runs/vocabulary.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { Tokenizer } from "../ports/tokenizer.js";
import { DEFAULT_RESERVED_OUTPUT, DEFAULT_SAFETY_BUFFER } from "./budget.js";
import { estimatorFor, type TokenEstimator } from "./token-estimator.js";
import { type BuiltContext, type ContextInput, type ContextPlan, type FoldProposal, MemoCache, planContext } from "./context-plan.js";
import { withSpan } from "../loop/spans.js";
import { budgetTokens } from "../ports/run-state.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { CompactionPolicies } from "./micro-compaction.js";
import { emptySections, mergeSummaryAnswer, type StoredSummary, type SummarySections, summaryRequest } from "./summary.js";
import { transcriptChunks } from "./summary-transcript.js";
import { shownToModel } from "./conversation-log.js";

export type { BuiltContext, ContextInput };

/** The request without the summarisation step: micro-compaction and the log's latest summary only. */
export function buildContext(input: ContextInput): BuiltContext {
  const { messages, budget, carried, recorded } = planContext(input);
  return { messages, budget, carried, recorded };
}

export type ContextBuilderDeps = {
  model: ModelPort;
  /** Per-tool micro-compaction policy (COMPACTION_POLICIES); "*" is the default. */
  policies?: CompactionPolicies;
  minCompactChars?: number;
  /** The budget's reserves and compaction trigger (CONTEXT_RESERVED_OUTPUT, CONTEXT_SAFETY_BUFFER, COMPACTION_TRIGGER_RATIO). */
  budget?: ContextBudget;
  /** What the budget counts tokens with (TOKENIZER); the local estimator without one. */
  tokenizer?: Tokenizer;
};

/** The configurable parts of the budget (R8); each defaults to budget.ts's constant. */
export type ContextBudget = { reservedOutput?: number; safetyBuffer?: number; triggerRatio?: number };

export type BuildRequest = {
  run: RunRecord;
  /** The conversation's log as the attempt holds it. */
  log: readonly LoggedMessage[];
  /** Appends a new summary to the log (through the attempt's fence); returns the rows written. */
  appendSummary: (content: string) => Promise<readonly LoggedMessage[]>;
  /** Counts the summariser's tokens against the run's budget, like any model call's. */
  addTokens: (usage: TokenUsage) => Promise<unknown>;
  systemPrompt: string;
  tools: readonly ToolSchema[];
  /** The turn span: the COMPACTION event goes here, the summarisation span under it. */
  span: SpanRef;
  /** The attempt's trace: the summarisation is recorded in it. */
  sink: TraceSink;
  signal?: AbortSignal;
};

export class ContextBuilder {
  /** Log entries never change, so their chat form and estimates are remembered across requests. */
  private readonly cache: MemoCache;

  /** How the budget counts tokens (the run's tokenizer, else the local estimator). */
  private readonly tokens: TokenEstimator;

  constructor(private readonly deps: ContextBuilderDeps) {
    this.tokens = estimatorFor(deps.tokenizer);
    this.cache = new MemoCache(this.tokens);
  }

  /**
   * The tokens of a reply, counted as the budget counts a request: its text (and reasoning), each
   * call's name and arguments, and a message's framing. What a request whose server reported no
   * usage is charged for its output (loop/model-call.ts).
   */
  replyTokens(reply: { content: string | null; toolCalls: readonly ToolCall[]; reasoning?: string }): number {
    const counted = this.tokens.messages([{ role: "assistant", content: reply.content, toolCalls: [...reply.toolCalls] }]);
    return Math.min(counted + (reply.reasoning ? this.tokens.text(reply.reasoning) : 0), MAX_TOKEN_COUNT);
  }

  /**
   * The tokens MCP tool definitions may take of a request (R14): half the context window left
   * after the reserves (reserved output and safety buffer), so that a server listing many or long
   * tools leaves the run room to work, while a principal's usual servers (a few dozen tools, some
   * thousands of tokens) fit a 32k window whole.
   */
  mcpToolShare(): number {
    const reserved = (this.deps.budget?.reservedOutput ?? DEFAULT_RESERVED_OUTPUT) + (this.deps.budget?.safetyBuffer ?? DEFAULT_SAFETY_BUFFER);
    return Math.max(0, Math.floor((this.deps.model.contextWindow - reserved) / 2));
  }

  /** The tokens one tool's definition takes in a request, counted as the budget counts it. */
  toolTokens(schema: ToolSchema): number {
    return this.tokens.tools([schema]);
  }

  async build(request: BuildRequest): Promise<BuiltContext> {
    const input: ContextInput = {
      systemPrompt: request.systemPrompt,
      log: request.log,
      tools: request.tools,
      contextWindow: this.deps.model.contextWindow,
      runId: request.run.id,
      policies: this.deps.policies,
      minCompactChars: this.deps.minCompactChars,
      reservedOutput: this.deps.budget?.reservedOutput,
      safetyBuffer: this.deps.budget?.safetyBuffer,
      triggerRatio: this.deps.budget?.triggerRatio,
      cache: this.cache,
    };
    let plan = planContext(input);
    const fold = plan.fold;
    let outcome: "none" | "new" | "fallback" | "failed" = "none";
    let summaryId: string | null = null;
    if (fold) {
      try {
        const stored = await this.summarize(request, plan, fold);
        summaryId = await this.appendSummary(request, stored);
        plan = planContext({ ...input, summaryOverride: stored });
        outcome = "new";
      } catch (error) {
        if (request.signal?.aborted) throw error;
        const message = error instanceof Error ? error.message : String(error);
        // The run goes on: micro-compaction alone, or — when that does not even fit — a fold
        // described by code for this request only (nothing is persisted, the next turn retries).
        outcome = plan.budget.overBudget ? "fallback" : "failed";
        await request.sink.event(
          request.span,
          "ERROR",
          `the history summary could not be written (${message}); continuing with micro-compaction${outcome === "fallback" ? " and a placeholder summary" : ""}`,
        );
        if (outcome === "fallback") plan = planContext({ ...input, summaryOverride: fallbackSummary(plan, fold) });
      }
    }
    await this.recordCompaction(request.sink, request.span, plan, fold, outcome, summaryId);
    return { messages: plan.messages, budget: plan.budget, carried: plan.carried, recorded: plan.recorded };
  }

  private async recordCompaction(sink: TraceSink, span: SpanRef, plan: ContextPlan, fold: FoldProposal | null, outcome: string, summaryId: string | null) {
    const { stats } = plan;
    if (stats.evidenceCleared.length === 0 && !plan.summary && outcome === "none") return;
    await sink.event(span, "COMPACTION", {
      evidenceCleared: stats.evidenceCleared,
      summary: outcome === "none" ? (plan.summary ? "reused" : "none") : outcome,
      summaryMessageId: summaryId,
      turnsFolded: outcome === "new" || outcome === "fallback" ? (fold?.turns ?? 0) : 0,
      foldedSeq: fold && outcome !== "failed" ? { from: fold.fromSeq, through: fold.throughSeq } : null,
      turnsFoldedTotal: stats.turnsFolded,
      coversThroughSeq: stats.coversThroughSeq,
      tokensBefore: stats.tokensBefore,
      tokensAfter: stats.tokensAfter,
      sectionsTrimmed: stats.sectionsTrimmed,
    });
  }

  /** R6: the model merge-updates the current sections with the folded turns, in one COMPACTION span. */
  private async summarize(request: BuildRequest, plan: ContextPlan, fold: FoldProposal): Promise<StoredSummary> {
    const { model } = this.deps;
    const usage: TokenUsage = { input: 0, output: 0, cached: 0, reasoning: 0 };
    const span = {
      traceId: request.span.traceId,
      parent: request.span,
      kind: "COMPACTION" as const,
      name: `summarize_history ${model.label}`,
      attributes: { foldedFromSeq: fold.fromSeq, foldedThroughSeq: fold.throughSeq, turns: fold.turns, merge: plan.summary !== null },
    };
    try {
      const sections = await withSpan(request.sink, span, () => this.mergeSections(request, plan, fold, usage), {
        ended: () => ({ status: "OK", usage }),
        failed: async (error, started) => {
          await request.sink.event(started, "ERROR", error instanceof Error ? error.message : String(error));
          return { status: request.signal?.aborted ? "CANCELLED" : "ERROR", usage };
        },
      });
      return {
        format: "dossier.summary.v1",
        coversThroughSeq: fold.throughSeq,
        foldedFromSeq: fold.fromSeq,
        turnsFolded: (plan.summary?.turnsFolded ?? 0) + fold.turns,
        sections,
      };
    } finally {
      // The summariser's tokens count against the run's budget like any model call's.
      if (budgetTokens(usage) > 0) await request.addTokens(usage);
    }
  }

  /** The summary's sections merged with the folded transcript, chunk by chunk; adds each request's usage to `usage`. */
  private async mergeSections(request: BuildRequest, plan: ContextPlan, fold: FoldProposal, usage: TokenUsage): Promise<SummarySections> {
    const { model } = this.deps;
    let sections: SummarySections = plan.summary?.sections ?? emptySections();
    const reservedOutput = this.deps.budget?.reservedOutput ?? DEFAULT_RESERVED_OUTPUT;
    for (const chunk of transcriptChunks(fold.entries, sections, plan.budget.effectiveWindow)) {
      const maxOutputTokens = Math.min(reservedOutput, Math.max(1_024, plan.summaryAllowance * 2));
      const asked = summaryRequest(sections, chunk, maxOutputTokens);
      // Shown as a turn's request is: the transcript quotes tools' and models' text as it is logged.
      const response = await model.complete({ ...asked, messages: shownToModel(asked.messages), signal: request.signal });
      // A server that reports no usage: the request counts what the budget counts it and its reply at.
      const used =
        response.usageReported === false
          ? { input: this.tokens.messages(asked.messages), output: this.replyTokens(response), cached: 0, reasoning: 0 }
          : response.usage;
      for (const key of ["input", "output", "cached", "reasoning"] as const) usage[key] = addTokenCounts(usage[key], used[key]);
      sections = mergeSummaryAnswer(sections, response.content);
    }
    return sections;
  }

  private async appendSummary(request: BuildRequest, stored: StoredSummary): Promise<string | null> {
    const [row] = await request.appendSummary(JSON.stringify(stored));
    return row?.id ?? null;
  }
}

/** A code-written stand-in when the model's summary failed and the request would not fit otherwise. */
function fallbackSummary(plan: ContextPlan, fold: FoldProposal): StoredSummary {
  const previous = plan.summary?.sections ?? emptySections();
  const evidence = fold.entries.filter((e) => e.message.role === "TOOL").map((e) => resultEvidenceId(e.message.id));
  const note = `(Log messages ${fold.fromSeq}–${fold.throughSeq} are folded without a written summary: it could not be made. Their originals stay in the log.)`;
  return {
    format: "dossier.summary.v1",
    coversThroughSeq: fold.throughSeq,
    foldedFromSeq: fold.fromSeq,
    turnsFolded: (plan.summary?.turnsFolded ?? 0) + fold.turns,
    sections: {
      ...previous,
      currentState: [previous.currentState, note].filter(Boolean).join("\n"),
      toolResultDigest: [previous.toolResultDigest, evidence.length ? `Folded results: ${evidence.slice(-40).join(", ")}` : ""].filter(Boolean).join("\n"),
    },
  };
}
