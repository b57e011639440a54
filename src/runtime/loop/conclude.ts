// The one last model request of a CONCLUDE stop (cancelRun): no tools offered, the log as it is
// (calls the stop cut off recorded as interrupted, R7), and an instruction after it asking for the
// best answer from the evidence gathered so far. Its reply is the run's answer, published like any.
// It is the run's next model request: steering inputs waiting enter the log right before it, as
// before any turn's (steering.ts), rather than being released by the run's end.
// Like every model request it is checked against the cost caps first (cost-caps.ts): a request
// that could cross maxCost, the daily cost limit or the monthly budget is not sent, and the run
// stops with stopReason BUDGET and the text it has. A stopping run does not wait: crossing
// confirmCostAbove stops it the same way instead of asking its owner.
import type { RecordedMessage, RecordedPart } from "../../domain/trace/recorded-request.js";
import { joinUserMessages } from "../../domain/trace/recorded-request.js";
import type { ContextBuilder } from "../memory/context-builder.js";
import type { AttemptLog } from "../memory/attempt-log.js";
import type { ChatMessage, ModelPort, TokenUsage } from "../ports/model.js";
import type { RunOutput } from "../ports/run-output.js";
import type { RunRecord, RunState } from "../ports/run-state.js";
import type { Tool } from "../ports/tool.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { Transact } from "../ports/attempt-fence.js";
import type { CostState } from "../../domain/costs/caps.js";
import { type CostBounds, checkCostCaps } from "./cost-caps.js";
import { callModel } from "./model-call.js";
import { deliverSteering, steeringWaits } from "./steering.js";
import type { Outcome } from "./outcome.js";

/** What the concluding request asks, after the log: the run's own words to the model, not a person's. */
export const CONCLUDE_INSTRUCTION =
  "Stop researching now: no more tools can be called. Using only the evidence gathered so far in this conversation, " +
  "give your best answer to the question. Say briefly what remains uncertain or was not checked.";

type ConcludeDeps = { model: ModelPort; output?: RunOutput; context: ContextBuilder; runs: Pick<RunState, "addTokens" | "deliverInputs">; costs?: CostBounds };

type ConcludeTurn = {
  scope: { run: RunRecord; sink: TraceSink; write: Transact; signal: AbortSignal; log: AttemptLog };
  tools: ReadonlyMap<string, Tool>;
  profile: { systemPrompt: string };
  streamed: { text: string };
  /** The run's caps and spends, read when the stop was taken. */
  costs?: CostState;
  /** Steering inputs waited when the stop was taken: the request delivers them first. */
  inputsPending?: boolean;
  /** Whether a steering input was heard announced since last asked: the request delivers it too. */
  steered?: () => boolean;
};

/** Makes the concluding request inside the turn span `span`; its answer settles the run (concluded early). */
export async function concludingRequest(deps: ConcludeDeps, turn: ConcludeTurn, span: SpanRef): Promise<Outcome> {
  const { run, sink, write, signal, log } = turn.scope;
  if (steeringWaits(turn)) await deliverSteering(deps.runs, turn.scope, span);
  const built = await deps.context.build({
    run,
    log: log.entries,
    appendSummary: (content) => log.append(write, [{ role: "SUMMARY", content }]),
    addTokens: (usage) => deps.runs.addTokens(write, run.id, usage),
    systemPrompt: turn.profile.systemPrompt,
    tools: [],
    span,
    sink,
    signal,
  });
  await sink.event(span, "BUDGET", built.budget);
  const caps = { run, costs: turn.costs, model: deps.model.model, budget: built.budget, span, sink, write, runLog: log.ofRun() };
  // No approvals: a stopping run ends at a threshold rather than waiting for a decision.
  const capped = await checkCostCaps({ bounds: deps.costs }, caps);
  if (capped.step && capped.step.type !== "run_again") return capped.step;
  const countUsage = (usage: TokenUsage) => deps.runs.addTokens(write, run.id, usage);
  const request = { ...withInstruction(built.messages, built.recorded, CONCLUDE_INSTRUCTION), maxOutputTokens: capped.maxOutputTokens, countUsage };
  turn.streamed.text = "";
  const { response } = await callModel(deps, { ...turn, tools: new Map() }, span, request, built.budget, turn.streamed);
  turn.streamed.text = "";
  await deps.runs.addTokens(write, run.id, response.usage);
  // No tools were offered: calls the model asks for anyway are not the run's, only its text is.
  const answer = response.content ?? "";
  const [reply] = await log.append(write, [{ role: "ASSISTANT", content: answer, toolCalls: [] }]);
  await sink.event(span, "FINAL_REPLY", answer, { messageId: reply?.id });
  return { type: "final", answer, concluded: true };
}

/**
 * The request with one more user message, the instruction (joined to a user message it follows,
 * for chat servers that reject two in a row); the recorded request says the same.
 */
function withInstruction(messages: ChatMessage[], recorded: RecordedMessage[], instruction: string): { messages: ChatMessage[]; recorded: RecordedMessage[] } {
  const last = messages.at(-1);
  const lastRecorded = recorded.at(-1);
  const added: ChatMessage = { role: "user", content: instruction };
  if (last?.role !== "user" || !lastRecorded) return { messages: [...messages, added], recorded: [...recorded, added] };
  const parts: RecordedPart[] =
    "logMessage" in lastRecorded ? [lastRecorded] : "parts" in lastRecorded ? lastRecorded.parts : [{ text: lastRecorded.content ?? "" }];
  return {
    messages: [...messages.slice(0, -1), joinUserMessages([last, added])],
    recorded: [...recorded.slice(0, -1), { role: "user", parts: [...parts, { text: instruction }] }],
  };
}
