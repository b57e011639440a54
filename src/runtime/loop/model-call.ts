// One model request of a turn (R1): a MODEL_CALL span with the request as recorded and the
// reply's usage, the output reported live while it streams (runOutput), reasoning recorded as
// THINKING events. A failure of the request itself is a ModelRequestFailed (the run fails with
// MODEL_ERROR), as opposed to anything Dossier did around it. A reply cut off mid-stream
// (ModelReplyInterrupted) is not one: its call ends as an error naming the interruption, nothing of
// it stands, and the request is made again as a new call (a new MODEL_CALL span), as the adapter's
// bound allows; past it the attempt is handed back (ModelRetryLater), never failed. A reply whose
// server reported no usage is charged its bound instead — the input tokens Dossier counted for the
// request and the output it counts in the reply — for the token budget and the cost caps, its span
// marked `usageEstimated: true`: what a server does not report is never free. A reply that passed
// the bound on its size (MODEL_MAX_REPLY_BYTES) stands as what came within it, its span saying so
// (`replyCut`), like a reply the model cut at its token limit. A reply cut off mid-stream whose
// server reported no usage is charged the same bound: its counted input and what streamed of it.
import { setTimeout as sleep } from "node:timers/promises";
import type { RecordedMessage } from "../../domain/trace/recorded-request.js";
import { type ChatMessage, type ModelPort, ModelReplyInterrupted, type ModelResponse, type ModelStreamEvent, type TokenUsage } from "../ports/model.js";
import type { ContextBuilder } from "../memory/context-builder.js";
import { MAX_TOKEN_COUNT } from "../../domain/runs/vocabulary.js";
import type { OutputEvent, RunOutput } from "../ports/run-output.js";
import type { Tool } from "../ports/tool.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import { failedSpanStatus, note, type SpanEnding, withSpan } from "./spans.js";
import { CALL_IDS_LEFT_OUT, CallIds } from "./call-ids.js";

/** The model's request failed (as opposed to anything Dossier did around it). */
export class ModelRequestFailed extends Error {
  override name = "ModelRequestFailed";
  /** What the failed call was charged (a reply cut off: what its server reported, else its bound). */
  charged: TokenUsage | undefined;
}

/** What a model call takes part in: the run, its attempt's trace and stop signal, the turn's tools. */
export type ModelCallTurn = {
  scope: { run: { id: string; ownerId: string }; sink: TraceSink; signal: AbortSignal; modelCalls?: ModelCallsOfAttempt };
  tools: ReadonlyMap<string, Tool>;
};

/**
 * The run's last model call as the attempt knows it: null before the first call of the run's
 * first attempt, undefined at the start of a later attempt (an earlier attempt's calls are not known here).
 */
export type ModelCallsOfAttempt = { last: string | null | undefined };

export type ModelCallRequest = {
  messages: ChatMessage[];
  recorded: RecordedMessage[];
  maxOutputTokens?: number;
  /**
   * The call ids the run used before this request (call-ids.ts): a reply's call gets none of them.
   * A call whose reply fails adds those it streamed (runOutput named them): its retry gets none of them either.
   */
  callIdsOfRun?: Set<string>;
  /** Adds the usage a cut-off reply reported to the run's tokens (its span's end charges its cost). */
  countUsage?: (usage: TokenUsage) => Promise<unknown>;
};

/** The request made as one model call, and again as a new call each time its reply is cut off mid-stream. */
export async function callModel(
  deps: ModelCallDeps,
  turn: ModelCallTurn,
  parent: SpanRef,
  request: ModelCallRequest,
  /** The request's budget breakdown (recorded on its span); `estimate`: its input tokens as Dossier counts them. */
  budget: { estimate: number },
  /** The reply's text as it streams: what a stop NOW keeps of a reply it cut off. */
  streamed?: { text: string },
  /** The caller ends the span of a request that succeeded (see modelCall). */
  endedByCaller = false,
): Promise<ModelCallResult> {
  const { signal } = turn.scope;
  for (let retries = 0; ; retries += 1) {
    try {
      return await modelCall(deps, turn, parent, request, budget, streamed, endedByCaller, retries);
    } catch (error) {
      const cut = error instanceof ModelRequestFailed && error.cause instanceof ModelReplyInterrupted ? error.cause : undefined;
      if (!cut || signal.aborted) throw error;
      // Nothing of the cut reply stands: a stop from here on keeps none of its text.
      if (streamed) streamed.text = "";
      const charged = (error as ModelRequestFailed).charged;
      if (charged) await request.countUsage?.(charged);
      // A stop meanwhile ends the wait: the attempt ends as the stop says.
      await sleep(cut.retryAfterMs, undefined, { signal });
    }
  }
}

type ModelCallDeps = { model: ModelPort; output?: RunOutput; context: Pick<ContextBuilder, "replyTokens"> };
type ModelCallResult = {
  response: ModelResponse;
  span: SpanRef;
  ending: SpanEnding;
  /** The ids of every call the reply streamed (runOutput named them), its calls' and any the bound left out. */
  streamedCallIds: string[];
};

async function modelCall(
  deps: ModelCallDeps,
  turn: ModelCallTurn,
  parent: SpanRef,
  { messages, recorded, maxOutputTokens, callIdsOfRun }: ModelCallRequest,
  /** The request's budget breakdown (recorded on its span); `estimate`: its input tokens as Dossier counts them. */
  budget: { estimate: number },
  /** The reply's text as it streams: what a stop NOW keeps of a reply it cut off. */
  streamed?: { text: string },
  /**
   * The caller ends the span of a request that succeeded (with `ending`), in the transaction
   * that logs its reply (TraceSink.endSpanWith); a failed request's span is ended here either way.
   */
  endedByCaller = false,
  /** The request's earlier calls whose replies were cut off (ModelRequest.retries). */
  retries = 0,
): Promise<ModelCallResult> {
  const { model } = deps;
  const { sink, signal } = turn.scope;
  // What the request itself threw (as opposed to recording its failure afterwards).
  let failure: unknown;
  // The reply as it streamed (bounded by the adapter): what a reply cut off without usage is charged for.
  const partial = { text: "", reasoning: "", calls: new Map<number, string>() };
  let charged: TokenUsage | undefined;
  // The ids the reply's calls streamed under: a reply that fails keeps them the run's.
  let ids: CallIds | undefined;
  try {
    return await withSpan(
      sink,
      {
        traceId: parent.traceId,
        parent,
        kind: "MODEL_CALL",
        name: `chat ${model.label}`,
        // The request as references to the log where it carries entries as they are: stored once.
        attributes: { "gen_ai.request.model": model.model, scripted: model.scripted, budget, request: recorded },
      },
      async (span) => {
        const calls = turn.scope.modelCalls;
        const output = deps.output?.modelCall({ runId: turn.scope.run.id, ownerId: turn.scope.run.ownerId, spanId: span.id, follows: calls?.last });
        if (calls) calls.last = span.id;
        // The turn's records so far (this span's start among them) are written while the model
        // answers, not after the request went out: the reply's write waits for them.
        sink.writeNow?.();
        // Each call's id is fixed as it first appears, so the live output names it as it is stored.
        const given = (ids = new CallIds(span.id, callIdsOfRun));
        const reported: number[] = [];
        try {
          const response = await model.complete(
            {
              messages,
              tools: [...turn.tools.values()].map((t) => t.schema),
              signal,
              ...(maxOutputTokens && { maxOutputTokens }),
              ...(retries > 0 && { retries }),
            },
            (event) => {
              if (event.type === "tool_call") reported.push(event.index);
              output?.report(withCallId(given, event));
              if (event.type === "text") {
                partial.text += event.delta;
                if (streamed) streamed.text += event.delta;
              }
              if (event.type === "tool_call_delta") partial.calls.set(event.index, (partial.calls.get(event.index) ?? "") + event.delta);
              if (event.type === "reasoning") {
                partial.reasoning += event.delta;
                // Best effort: a delta that cannot be recorded (the attempt was stopped) is dropped.
                void note(sink, span, "THINKING", event.delta).catch(() => undefined);
              }
            },
          );
          const estimated = response.usageReported === false;
          const usage = estimated ? boundUsage(budget.estimate, deps.context.replyTokens({ ...response, reasoning: partial.reasoning })) : response.usage;
          const toolCalls = given.reply(response.toolCalls, reported);
          const streamedCallIds = given.given();
          const leftOut = streamedCallIds.filter((id) => !toolCalls.some((call) => call.id === id));
          const ending: SpanEnding = {
            status: "OK",
            usage,
            attributes: {
              "gen_ai.response.model": response.model,
              finishReason: response.finishReason,
              ...(estimated && { usageEstimated: true }),
              ...(response.cutAtBytes !== undefined && { replyCut: replyCut(response) }),
              // Stored with the reply: a later attempt of the run reads them back (callIdsOfRun).
              ...(leftOut.length > 0 && { [CALL_IDS_LEFT_OUT]: leftOut }),
            },
          };
          return { response: { ...response, usage, toolCalls }, span, ending, streamedCallIds };
        } finally {
          output?.end();
        }
      },
      {
        ended: ({ ending }) => (endedByCaller ? null : ending),
        failed: async (error, span) => {
          failure = error;
          await sink.event(span, "ERROR", errorMessage(error));
          // Nothing of the reply stands, but runOutput named its calls: their ids stay the run's, for
          // this attempt's retry and, stored with the span's end, for any later attempt (callIdsOfRun).
          const streamedIds = ids?.given() ?? [];
          for (const id of streamedIds) callIdsOfRun?.add(id);
          const leftOut = streamedIds.length > 0 ? { [CALL_IDS_LEFT_OUT]: streamedIds } : {};
          // A reply cut off: the span says so, and what the server reported of its usage is charged —
          // or, when it reported none, the request's bound: its counted input and what streamed of the reply.
          if (!(error instanceof ModelReplyInterrupted)) return { status: failedSpanStatus(signal), ...(streamedIds.length > 0 && { attributes: leftOut }) };
          charged = error.usage ?? boundUsage(budget.estimate, deps.context.replyTokens(partialReply(partial)));
          return {
            status: failedSpanStatus(signal),
            attributes: { interrupted: true, ...(!error.usage && { usageEstimated: true }), ...leftOut },
            usage: charged,
          };
        },
      },
    );
  } catch (error) {
    if (error !== failure) throw error;
    throw Object.assign(new ModelRequestFailed(errorMessage(error), { cause: error }), { charged });
  }
}

/** What streamed of a reply, as the reply it would have been (its calls' names are not counted). */
const partialReply = ({ text, reasoning, calls }: { text: string; reasoning: string; calls: Map<number, string> }) => ({
  content: text.length > 0 ? text : null,
  toolCalls: [...calls.values()].map((args) => ({ id: "", name: "", arguments: args })),
  reasoning,
});

/** What a request whose server reported no usage is charged: its counted input and output, each at most MAX_TOKEN_COUNT. */
const boundUsage = (input: number, output: number): TokenUsage => ({
  input: Math.min(Math.max(0, Math.ceil(input)), MAX_TOKEN_COUNT),
  output,
  cached: 0,
  reasoning: 0,
});

/** Why a reply that passed its bound on size ended: the bound, and the tool calls left out. */
const replyCut = ({ cutAtBytes, toolCallsLeftOut }: ModelResponse) => ({
  bound: "MODEL_MAX_REPLY_BYTES",
  bytes: cutAtBytes,
  toolCallsLeftOut: toolCallsLeftOut ?? 0,
});

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * A tool call's event with the id Dossier stores the call with (call-ids.ts): the model's unless
 * it is missing or repeated. Ids and names are identifiers the runtime keys on (results, spill
 * handles), not content: a NUL or an unpaired surrogate in them is replaced (␀, U+FFFD) rather
 * than escaped; the arguments and the text stay exactly as the model gave them.
 */
function withCallId(ids: CallIds, event: ModelStreamEvent): OutputEvent {
  if (event.type === "tool_call_delta") return { ...event, id: ids.of(event.index, event.id) };
  if (event.type === "tool_call") return { ...event, call: { ...event.call, id: ids.of(event.index, event.call.id) } };
  return event;
}
