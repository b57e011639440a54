// The action step (R16): the tool calls of one model turn run concurrently, each in its own span
// with its own timeout. A failing call becomes an error result for the model and never aborts
// its siblings (a failure of Dossier's own around it, its gate's or its log entry's, ends the
// step, and the step ends only once every call has); results come back in the order the model
// asked for them. One reply's calls are bounded, whatever the model asks for: only its first `maxPerReply` execute — the others are
// answered at once with an error result the model reads (they pass no gate: they never ask for a
// person's approval) — and at most `maxConcurrency` of them run at once, the next starting as one
// ends, so one run never starts hundreds of programs or requests together. A payload step (spill
// protection, R10) sees each output, error results included, inside its own call's span. Each result is logged
// the moment it is known (so a crash loses only the calls still running), and its TOOL_OUTPUT
// event refers to that log entry instead of storing the output a second time.
import { head } from "../../domain/text/whole-characters.js";
import type { Transact } from "../../domain/transaction.js";
import { failedSpanStatus, note, withSpan } from "../loop/spans.js";
import { RunStopped, stoppedSpanStatus } from "../loop/stop.js";
import type { ToolCall } from "../ports/model.js";
import type { NewSpill, PayloadStep } from "../ports/spill-store.js";
import { type Tool, ToolError, type ToolRun } from "../ports/tool.js";
import type { Logger } from "../../logger.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import { Places } from "../places.js";
import { mcpCallFailure } from "../mcp/mcp-call-failure.js";

/**
 * `cancelled`: the call was cut off by a stop of the run; `output` then says so but is no result of the tool.
 * `pending`: the call waits for a person's decision (its gate said so); it has no result yet.
 */
export type ToolResult = {
  call: ToolCall;
  output: string;
  isError: boolean;
  cancelled: boolean;
  durationMs: number;
  spill?: NewSpill | null;
  pending?: boolean;
};

/**
 * What happens to a call before it executes (human approval, tools/approval-gate.ts): it executes,
 * it is declined (`output` is the result the model sees instead), or it waits for a decision.
 */
export type GateVerdict = { type: "execute"; arguments?: string } | { type: "decline"; output: string } | { type: "pending" };

/**
 * What the model reads before the result of a call a person edited: its log still shows the
 * arguments it asked for (the log is append-only), so the result says which ones ran.
 */
export function editedNote(call: Pick<ToolCall, "name">, edited: string): string {
  return `[the person reviewing tool calls edited the arguments of this call of "${call.name}" before it ran; it ran with: ${edited}]\n`;
}
export type ToolGate = (call: ToolCall, span: SpanRef) => Promise<GateVerdict>;

/** Appends a call's result to the conversation log; returns the entry's id. */
export type LogResult = (result: { call: ToolCall; output: string; spill: NewSpill | null }) => Promise<string>;

export type { PayloadStep };

/** How many calls of one reply execute (MAX_TOOL_CALLS_PER_REPLY), and how many of them run at once (TOOL_MAX_CONCURRENCY). */
export type ToolCallLimits = { maxPerReply: number; maxConcurrency: number };

export const DEFAULT_TOOL_CALL_LIMITS: ToolCallLimits = { maxPerReply: 64, maxConcurrency: 8 };

/** The result the model sees for a call past the reply's limit: it did not execute. */
export function overLimitResult(limit: number, position: number, total: number): string {
  return (
    `Error: not executed: a reply may ask for at most ${limit} tool calls, and this was call ${position} of ${total}. ` +
    "Ask again in your next reply for the calls you still need."
  );
}

export type ExecuteOptions = {
  calls: ToolCall[];
  tools: ReadonlyMap<string, Tool>;
  sink: TraceSink;
  /** The attempt's fenced transaction, for tools that write. */
  write: Transact;
  parent: SpanRef;
  run: ToolRun;
  /** The run's signal: cancellation or deadline. */
  signal: AbortSignal;
  defaultTimeoutMs: number;
  payloadStep?: PayloadStep;
  /**
   * Records each result in the log as soon as it is known. A call cut off by a stop has no result
   * to record: it stays dangling, and whoever reads the log next sees the neutral repair note in
   * its place (memory/repair.ts).
   */
  logResult?: LogResult;
  /** Decides, inside each call's span, whether it executes, is declined or waits; without it every call executes. */
  gate?: ToolGate;
  /** The reply's bounds; DEFAULT_TOOL_CALL_LIMITS without them. */
  limits?: ToolCallLimits;
  /** Where a built-in tool's unexpected failure is written in full (the model is told only that it failed). */
  logger?: Logger;
};

export async function executeToolCalls(options: ExecuteOptions): Promise<ToolResult[]> {
  const { maxPerReply, maxConcurrency } = options.limits ?? DEFAULT_TOOL_CALL_LIMITS;
  const total = options.calls.length;
  const places = new Places(maxConcurrency);
  // A call that fails outside its tool (its gate, its trace or its log entry: the database, not
  // the tool) ends the step: the calls still running are stopped, the ones not begun never begin,
  // and the step ends only once every tool it started has (invoke). An attempt never leaves a tool
  // running behind it: the next attempt would find the call begun and run its siblings meanwhile.
  const givingUp = new AbortController();
  // Each call's signal also aborts when the step gives up.
  const step: ExecuteOptions = { ...options, signal: AbortSignal.any([options.signal, givingUp.signal]) };
  let failure: { error: unknown } | undefined;
  const settled = await Promise.allSettled(
    options.calls.map((call, index) =>
      (index < maxPerReply
        ? places.run(() => (step.signal.aborted ? notStarted(call) : executeOne(call, step)))
        : executeOne(call, step, overLimitResult(maxPerReply, index + 1, total))
      ).catch((error: unknown) => {
        failure ??= { error };
        givingUp.abort(new RunStopped("HANDED_BACK", `another call of the step failed: ${error instanceof Error ? error.message : String(error)}`));
        throw error;
      }),
    ),
  );
  if (failure) throw failure.error;
  return settled.map((result) => (result as PromiseFulfilledResult<ToolResult>).value);
}

/** A call whose turn came after the run was stopped: it never began (no span, no result to log; repair answers it). */
async function notStarted(call: ToolCall): Promise<ToolResult> {
  return { call, output: "Error: the run was stopped before this call began.", isError: true, cancelled: true, durationMs: 0 };
}

/** `refused`: the call does not execute; this error result is its result, and no gate is asked. */
async function executeOne(call: ToolCall, options: ExecuteOptions, refused?: string): Promise<ToolResult> {
  const started = Date.now();
  const input = {
    traceId: options.parent.traceId,
    parent: options.parent,
    kind: "TOOL_CALL" as const,
    name: `execute_tool ${call.name}`,
    attributes: { "gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.id },
  };
  return withSpan(
    options.sink,
    input,
    async (span) => {
      await note(options.sink, span, "TOOL_INPUT", call.arguments);
      if (refused !== undefined) return concluded(call, { output: refused, isError: true, cancelled: false }, span, options, started);
      const verdict = (await options.gate?.(call, span)) ?? { type: "execute" };
      if (verdict.type === "pending") return { call, output: "", isError: false, cancelled: false, durationMs: Date.now() - started, pending: true };
      const edited = verdict.type === "execute" && verdict.arguments !== undefined ? verdict.arguments : null;
      const invoked =
        verdict.type === "decline"
          ? { output: verdict.output, isError: false, cancelled: false }
          : await invoke(edited === null ? call : { ...call, arguments: edited }, span, options);
      const output = edited === null || invoked.cancelled ? invoked.output : editedNote(call, edited) + invoked.output;
      return concluded(call, { ...invoked, output }, span, options, started);
    },
    {
      ended: (result) => ({
        status: result.cancelled ? stoppedSpanStatus(options.signal) : result.isError ? "ERROR" : "OK",
        ...(result.pending ? { attributes: { "dossier.approval": "REQUESTED" } } : {}),
      }),
      failed: () => ({ status: failedSpanStatus(options.signal) }),
    },
  );
}

/** A call's result once known: spilled when too large, logged, and shown on its span (a cut-off call's is neither). */
async function concluded(
  call: ToolCall,
  { output, isError, cancelled }: { output: string; isError: boolean; cancelled: boolean },
  span: SpanRef,
  options: ExecuteOptions,
  started: number,
): Promise<ToolResult> {
  // An error result is output too (an MCP server's error can be megabytes): it spills like any.
  const spilled = cancelled ? null : await payload(call, output, span, options);
  const messageId = cancelled ? null : ((await options.logResult?.({ call, output, spill: spilled?.spill ?? null })) ?? null);
  // The event shows what the model is shown: a spilled result's preview (its own, small), else
  // the output itself, which the log entry holds.
  const kind = isError ? "ERROR" : "TOOL_OUTPUT";
  if (spilled) await note(options.sink, span, kind, spilled.shown);
  else await note(options.sink, span, kind, output, messageId ? { messageId } : {});
  return { call, output, isError, cancelled, durationMs: Date.now() - started, spill: spilled?.spill ?? null };
}

/** The payload step's decision; if it fails, the output stays inline (the budget check then guards the context). */
async function payload(call: ToolCall, output: string, span: SpanRef, options: ExecuteOptions) {
  try {
    return (await options.payloadStep?.(call, output, span)) ?? null;
  } catch (error) {
    await options.sink.event(span, "ERROR", `spilling the result failed: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
}

async function invoke(call: ToolCall, span: SpanRef, options: ExecuteOptions): Promise<{ output: string; isError: boolean; cancelled: boolean }> {
  const tool = options.tools.get(call.name);
  if (!tool) return { output: `Error: there is no tool named "${call.name}".`, isError: true, cancelled: false };
  let args: unknown;
  try {
    args = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  } catch {
    return { output: `Error: the arguments of ${call.name} are not valid JSON.`, isError: true, cancelled: false };
  }
  const timeoutMs = tool.timeoutMs ?? options.defaultTimeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  // Passed its gate after the run was stopped or its step gave up: the tool is not started at all.
  if (options.signal.aborted) return { output: "Error: the run was stopped before this call began.", isError: true, cancelled: true };
  let work: Promise<string> | undefined;
  try {
    work = tool.execute(args, { run: options.run, runId: options.run.id, toolCallId: call.id, signal, span, write: options.write });
    const output = await raceAbort(work, signal);
    return { output, isError: false, cancelled: false };
  } catch (error) {
    // A stopped run (cancelled, handed back by a stopping worker, past its deadline) or a step that
    // gives up waits for its tool to end (a program's processes stopped, a request closed), or for
    // its timeout, should the tool not heed its signal: the attempt ends — the run's lease and its
    // conversation's slot given back, another attempt or run free to begin — only once its tools have.
    if (options.signal.aborted && work) await settledAfterStop(work, timeout, call, options);
    if (options.signal.aborted) return { output: "Error: the run was stopped during this call.", isError: true, cancelled: true };
    if (timeout.aborted) return { output: `Error: ${call.name} timed out after ${timeoutMs} ms.`, isError: true, cancelled: false };
    return { output: `Error: ${failureShown(call, tool, error, options)}`, isError: true, cancelled: false };
  }
}

/** A stopped call's result, when its tool returns one all the same, is no result of the run: the log shows this much of it. */
const LATE_OUTPUT_SHOWN = 4_000;

/**
 * Waits for the tool of a call the stop cut off to settle, within the tool's own timeout. What it
 * returns after the stop goes to the server's log, as such: the run neither logs it nor shows it to
 * its model. A tool still running at its timeout is left behind, and the log says so.
 */
async function settledAfterStop(work: Promise<string>, timeout: AbortSignal, call: ToolCall, options: ExecuteOptions): Promise<void> {
  const where = { runId: options.run.id, tool: call.name, toolCallId: call.id, stop: String(options.signal.reason) };
  try {
    const output = await raceAbort(work, timeout);
    const shown = output.length > LATE_OUTPUT_SHOWN ? `${head(output, LATE_OUTPUT_SHOWN)}… (${output.length} characters)` : output;
    options.logger?.warn("a tool call returned after its run was stopped; its result is not the run's", { ...where, output: shown });
  } catch {
    if (timeout.aborted) options.logger?.warn("a tool call had not stopped by its timeout after its run was stopped; it is left behind", where);
  }
}

/**
 * What the model reads of a failed call. A ToolError is written for it (bad arguments, not
 * found, an MCP server's own error result, …); an MCP call that failed on the way says only how
 * (mcp-call-failure.ts); any other failure of a built-in tool is Dossier's own (a database error,
 * a bug) and may name server files and statements: the model is told only that the call failed,
 * and the server's log has the error.
 */
function failureShown(call: ToolCall, tool: Tool, error: unknown, options: ExecuteOptions): string {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof ToolError) return message;
  if (tool.mcpServer) {
    const failure = { tool: call.name, server: tool.mcpServer.serverName, runId: options.run.id, toolCallId: call.id };
    return mcpCallFailure(failure, error, options.logger);
  }
  options.logger?.error("a tool call failed inside Dossier", {
    runId: options.run.id,
    tool: call.name,
    toolCallId: call.id,
    error: error instanceof Error ? (error.stack ?? message) : message,
  });
  return `${call.name} failed inside Dossier; the server's log has the details. Try again later, or go on without this call.`;
}

/** Settles as soon as the signal aborts, even if the tool ignores its signal. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
