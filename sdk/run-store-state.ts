// What createRunStore() knows of a run, and how each update changes it. Pure: no I/O, no timers.
// The model's output (runOutput, through watchRun) gives the text of each model call and the
// arguments of each tool call as they are written; the trace (traceUpdates) gives each tool call's
// name, status and result, and the run's spans, tokens and durations.
import type { RunStatus, RunStoreTraceSubscription, ToolApprovalFieldsFragment } from "./generated/graphql.js";
import type { RunOutputUpdate } from "./run-output.js";

/** One model call's text, in the order the calls ran. */
export type ModelCallText = { id: string; text: string; done: boolean };

/**
 * Where a tool call is: its arguments still being written (STREAMING), executing (RUNNING),
 * waiting for a person's decision (WAITING_APPROVAL), rejected by one (REJECTED), or ended with its
 * span's status (OK, ERROR, CANCELLED, INTERRUPTED).
 */
export type ToolCallStatus = "STREAMING" | "RUNNING" | "WAITING_APPROVAL" | "REJECTED" | "OK" | "ERROR" | "CANCELLED" | "INTERRUPTED";

export type ToolCallState = {
  /** The call's id in its run: the toolCallId of decideToolCall, of the trace and of runOutput's TOOL_CALL_DELTA. */
  id: string;
  /** The tool's name; empty while only its arguments have arrived. */
  name: string;
  /**
   * The arguments as the model wrote them (JSON text) — whole only when `argumentsComplete`. A call
   * waiting for a decision shows those its approval request holds (what runs once approved), and
   * none ("") until the store has read the run's pending approvals.
   */
  arguments: string;
  /**
   * The arguments are the call's whole arguments: false while they are being written, for a waiting
   * call whose approval request is not read yet, and for the start of them the trace previews.
   */
  argumentsComplete: boolean;
  status: ToolCallStatus;
  /** The start of the call's result (or error) as the trace previews it; null before it has one. */
  result: string | null;
  durationMs: number | null;
};

export type TokenTotals = { input: number; output: number; cached: number; reasoning: number };

/** What the trace tells cheaply: how many spans and calls, tokens used, and time spent. */
export type TraceSummary = {
  spans: number;
  modelCalls: number;
  toolCalls: number;
  /** The sum of the model calls' usage. */
  tokens: TokenTotals;
  /** The run span's duration once it ended; null before. */
  durationMs: number | null;
  /** Time spent in ended model calls, and in ended tool calls. */
  modelMs: number;
  toolMs: number;
};

export type PendingApproval = ToolApprovalFieldsFragment;

type TraceUpdate = RunStoreTraceSubscription["traceUpdates"];
type Span = NonNullable<TraceUpdate["span"]>;

/** The output half of the state: what a page stores to resume after a reload. */
export type OutputState = {
  /** The position of the last output update applied (runOutput's seq); undefined before any. */
  seq: string | undefined;
  calls: ModelCallText[];
  /**
   * Tool-call arguments as runOutput streamed them, by model call (MODEL_CALL span id), then by
   * tool-call id: a call the bound on a reply's size left out of it streamed under an id that
   * another model call's call may carry too, and the two are never joined.
   */
  args: Record<string, Record<string, string>>;
  /** RUN_DONE came: the output is complete. */
  done: boolean;
  /** The output was followed from the run's start (no afterSeq): each streamed call's arguments are whole. */
  fromStart: boolean;
};

export const emptyOutput = (seq?: string): OutputState => ({ seq, calls: [], args: {}, done: false, fromStart: seq === undefined });

/** Applies one update of watchRun (each arrives once, in order) to the output state. */
export function applyOutput(state: OutputState, update: RunOutputUpdate): void {
  state.seq = update.seq;
  if (update.kind === "RUN_DONE") state.done = true;
  if (update.kind === "RESYNC_REQUIRED" || update.kind === "RUN_DONE" || !update.modelCallSpanId) return;
  let call = state.calls.find((c) => c.id === update.modelCallSpanId);
  if (!call) state.calls.push((call = { id: update.modelCallSpanId, text: "", done: false }));
  if (update.kind === "TEXT_DELTA") call.text += update.text ?? "";
  else if (update.kind === "TOOL_CALL_DELTA" && update.toolCallId) {
    const args = (state.args[update.modelCallSpanId] ??= {});
    args[update.toolCallId] = (args[update.toolCallId] ?? "") + (update.text ?? "");
  } else if (update.kind === "MESSAGE_DONE") call.done = true;
}

/**
 * The output as it stands: a model call whose MODEL_CALL span ended ERROR — its reply cut off
 * mid-stream (the request is made again as a new model call) or failed — left nothing in the log,
 * so its text is shown as empty and the tool calls it streamed are left out (none of them runs).
 */
export function standingOutput(output: OutputState, trace: TraceState): OutputState {
  const failed = new Set(output.calls.filter((call) => trace.spans.get(call.id)?.status === "ERROR").map((call) => call.id));
  if (failed.size === 0) return output;
  const args = Object.fromEntries(Object.entries(output.args).filter(([modelCall]) => !failed.has(modelCall)));
  return { ...output, calls: output.calls.map((call) => (failed.has(call.id) ? { ...call, text: "" } : call)), args };
}

/** A tool call's input as the trace previews it: its first 500 characters, and whether there is more. */
type InputPreview = { preview: string; truncated: boolean };

/** The trace half: every span as it last was, and each tool call's input and result previews. */
export type TraceState = {
  seq: string | undefined;
  spans: Map<string, Span>;
  inputs: Map<string, InputPreview>;
  results: Map<string, string>;
};

export const emptyTrace = (): TraceState => ({ seq: undefined, spans: new Map(), inputs: new Map(), results: new Map() });

/** Applies one trace update; true when it concerns an approval (the pending list may have changed). */
export function applyTrace(state: TraceState, update: TraceUpdate): boolean {
  state.seq = update.seq;
  const span = update.span;
  if (!span) return false;
  if (update.kind !== "EVENT_APPENDED") state.spans.set(span.id, span);
  else if (!state.spans.has(span.id)) state.spans.set(span.id, span);
  const event = update.event;
  if (!event) return false;
  if (event.kind === "TOOL_INPUT") state.inputs.set(span.id, { preview: event.preview, truncated: event.truncated });
  if (event.kind === "TOOL_OUTPUT" || event.kind === "ERROR") state.results.set(span.id, event.preview);
  return event.kind === "APPROVAL_REQUESTED" || event.kind === "APPROVAL_DECIDED";
}

const attributesOf = (span: Span): Record<string, unknown> => {
  try {
    return JSON.parse(span.attributes) as Record<string, unknown>;
  } catch {
    return {};
  }
};

const durationOf = (span: Span) => (span.endedAt ? Date.parse(span.endedAt) - Date.parse(span.startedAt) : null);

/**
 * The arguments a tool call's span ran (or waits) with, as streamed: those of the last model call
 * that streamed its id and started no later than the span (ids are unique in a run's log, not
 * among the calls a reply streamed and the bound left out of it).
 */
function streamedArguments(output: OutputState, trace: TraceState, id: string, span: Span): string | undefined {
  let found: string | undefined;
  for (const call of output.calls) {
    const text = output.args[call.id]?.[id];
    if (text === undefined) continue;
    const started = trace.spans.get(call.id)?.startedAt;
    if (found !== undefined && started !== undefined && Date.parse(started) > Date.parse(span.startedAt)) break;
    found = text;
  }
  return found;
}

/**
 * The arguments a call that waits for no decision ran (or runs) with: as streamed (whole when the
 * output was followed from the start), else the trace's preview of its input, else those an
 * earlier span of the call showed.
 */
function ranWith(output: OutputState, trace: TraceState, id: string, span: Span, earlier: ToolCallState | undefined) {
  const streamed = streamedArguments(output, trace, id, span);
  if (streamed !== undefined) return { arguments: streamed, argumentsComplete: output.fromStart };
  const input = trace.inputs.get(span.id);
  if (input) return { arguments: input.preview, argumentsComplete: !input.truncated };
  return { arguments: earlier?.arguments ?? "", argumentsComplete: earlier?.argumentsComplete ?? false };
}

/**
 * A model call's streamed calls that no span shows yet are still being written — unless the run's
 * output is complete, a later model call began, or the call's reply ended cut by the bound on its
 * size: its calls without a span were left out of it, and none of them runs.
 */
function stillStreaming(output: OutputState, trace: TraceState, modelCall: string): boolean {
  if (output.done || output.calls.at(-1)?.id !== modelCall) return false;
  const span = trace.spans.get(modelCall);
  return !span || span.status === "RUNNING" || attributesOf(span).replyCut === undefined;
}

/**
 * The run's tool calls in the order they started, one per call id: a call that waited for a
 * decision has a span that ended waiting and a later one that executed (or declined) it. A call
 * waiting for a decision shows the arguments its approval request holds — what runs once approved —
 * and never streamed text or a preview in their place: none until its request is read.
 */
export function toolCallsOf(output: OutputState, trace: TraceState, pending: readonly PendingApproval[]): ToolCallState[] {
  const calls = new Map<string, ToolCallState>();
  for (const span of trace.spans.values()) {
    if (span.kind !== "TOOL_CALL") continue;
    const attributes = attributesOf(span);
    const id = String(attributes["gen_ai.tool.call.id"] ?? span.id);
    const name = String(attributes["gen_ai.tool.name"] ?? span.name.replace(/^execute_tool /, ""));
    const approval = pending.find((request) => request.toolCallId === id);
    const waiting = attributes["dossier.approval"] === "REQUESTED" || approval !== undefined;
    const status: ToolCallStatus = waiting
      ? "WAITING_APPROVAL"
      : attributes["dossier.approval"] === "REJECT"
        ? "REJECTED"
        : span.status === "RUNNING"
          ? "RUNNING"
          : (span.status as ToolCallStatus);
    const shown = waiting
      ? { arguments: approval?.arguments ?? "", argumentsComplete: approval !== undefined }
      : ranWith(output, trace, id, span, calls.get(id));
    calls.set(id, {
      id,
      name,
      ...shown,
      status,
      result: trace.results.get(span.id) ?? null,
      durationMs: waiting ? null : durationOf(span),
    });
  }
  // Calls whose arguments are being written have no span yet.
  for (const [modelCall, args] of Object.entries(output.args)) {
    if (!stillStreaming(output, trace, modelCall)) continue;
    for (const [id, text] of Object.entries(args)) {
      if (!calls.has(id)) calls.set(id, { id, name: "", arguments: text, argumentsComplete: false, status: "STREAMING", result: null, durationMs: null });
    }
  }
  return [...calls.values()];
}

export function summarize(trace: TraceState): TraceSummary {
  const summary: TraceSummary = {
    spans: trace.spans.size,
    modelCalls: 0,
    toolCalls: 0,
    tokens: { input: 0, output: 0, cached: 0, reasoning: 0 },
    durationMs: null,
    modelMs: 0,
    toolMs: 0,
  };
  for (const span of trace.spans.values()) {
    const ms = durationOf(span);
    if (span.kind === "RUN") summary.durationMs = ms;
    if (span.kind === "MODEL_CALL") {
      summary.modelCalls += 1;
      summary.modelMs += ms ?? 0;
      for (const key of ["input", "output", "cached", "reasoning"] as const) summary.tokens[key] += span.usage?.[key] ?? 0;
    }
    if (span.kind === "TOOL_CALL") {
      summary.toolCalls += 1;
      summary.toolMs += ms ?? 0;
    }
  }
  return summary;
}

const TERMINAL: readonly RunStatus[] = ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"];
export const isTerminal = (status: RunStatus | null) => status !== null && TERMINAL.includes(status);
