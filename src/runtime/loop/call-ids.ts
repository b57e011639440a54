// The ids of a model message's tool calls as Dossier stores them: unique within the run. A model
// (or a hostile server pretending to be one) may repeat an id — within one message, or one an
// earlier message of the run already used — or leave it empty; results, approvals and spill
// handles are keyed on it, and a person's decision names it (decideToolCall), so two calls sharing
// one id would share a result or a decision: approving one call, or a decision made on a call
// that was since answered, would run another. A repeated or missing id gets one of Dossier's own,
// recorded everywhere the call is (the log, the trace, the approval request): the model is shown
// it with the call and its result in the next request. Each call's id is fixed the moment the call
// first appears in the model's stream, so the live output (runOutput) names every call by the id
// it is stored with: it is derived from the model call's span, the call's order of appearance,
// the ids the message's earlier calls got and the ids the run used before only, so the same reply
// in the same span always gets the same ids (an attempt that resumes reads them from the log).
import { createHash } from "node:crypto";
import type { ToolCall } from "../ports/model.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import { toolCallsOf } from "../../domain/json-columns.js";
import { forModel } from "../../domain/text/stored-text.js";

/**
 * The attribute of a model call's span that lists the ids of calls its reply streamed and left out
 * (cut by MODEL_MAX_REPLY_BYTES), or, when its reply failed (cut off mid-stream), every id it
 * streamed: runOutput named them, so they are the run's, whichever attempt resumes it.
 */
export const CALL_IDS_LEFT_OUT = "dossier.callIdsLeftOut";

/** The prefix of the ids Dossier gives calls whose own id is missing or repeated. */
export const OWN_CALL_ID_PREFIX = "dossier_call_";

const NONE: ReadonlySet<string> = new Set();

/**
 * The ids of one model message's calls, each fixed when the call first appears (a streamed
 * delta, the whole call, or the finished reply), keyed by the call's index in the model's stream.
 * A call keeps the model's id (NUL and unpaired surrogates replaced: ids are identifiers the
 * runtime keys on, see forModel) unless it is empty, the run used it before (`used`) or an
 * earlier call of the message already has it; then it gets Dossier's own.
 */
export class CallIds {
  private readonly seed: string;
  private readonly byIndex = new Map<number | string, string>();
  private readonly seen = new Set<string>();

  constructor(
    /** The model call's span: Dossier's ids differ from one model call to the next. */
    spanId: string,
    private readonly used: ReadonlySet<string> = NONE,
  ) {
    this.seed = createHash("sha256").update(spanId).digest("hex").slice(0, 12);
  }

  /** The id of the call at `index`: the one it got when it first appeared, else one given now. */
  of(index: number | string, modelId: string | undefined): string {
    const known = this.byIndex.get(index);
    if (known !== undefined) return known;
    const ordinal = this.byIndex.size;
    let id = forModel(modelId ?? "");
    if (id === "" || this.taken(id)) {
      id = `${OWN_CALL_ID_PREFIX}${this.seed}_${ordinal}`;
      // An earlier call of the message (or of the run) that has this very id keeps it.
      for (let n = 2; this.taken(id); n += 1) id = `${OWN_CALL_ID_PREFIX}${this.seed}_${ordinal}_${n}`;
    }
    this.seen.add(id);
    this.byIndex.set(index, id);
    return id;
  }

  /**
   * The reply's calls with their ids, names plain (forModel) too. `indexes`: the stream index of
   * each call, in the reply's order, as the model reported them whole. A model that reported none
   * has its calls keyed by their position (its stream indexes are the calls' order); one that
   * reported them otherwise than one each has them named apart from anything it streamed.
   */
  reply(calls: readonly ToolCall[], indexes: readonly number[]): ToolCall[] {
    const reported = indexes.length === calls.length && new Set(indexes).size === calls.length;
    const keyOf = (position: number) => (reported ? indexes[position]! : indexes.length === 0 ? position : `reply ${position}`);
    return calls.map((call, position) => {
      const id = this.of(keyOf(position), call.id);
      const name = forModel(call.name);
      return id === call.id && name === call.name ? call : { ...call, id, name };
    });
  }

  /**
   * Every id given so far: the reply's calls' and those of calls that streamed and were left out of
   * it (cut by MODEL_MAX_REPLY_BYTES). runOutput named each of them, so none may name a later call of the run.
   */
  given(): string[] {
    return [...this.seen];
  }

  private taken(id: string): boolean {
    return this.seen.has(id) || this.used.has(id);
  }
}

/**
 * The ids a run has used: its logged calls', those of its approval requests (a cost
 * confirmation's among them) and those of calls its replies streamed and left out (`leftOut`,
 * CALL_IDS_LEFT_OUT). A new call or confirmation of the run gets none of them.
 */
export function callIdsOfRun(runLog: readonly LoggedMessage[], approvals: Iterable<{ toolCallId: string }>, leftOut: Iterable<string> = []): Set<string> {
  const ids = new Set<string>(leftOut);
  for (const message of runLog) {
    if (message.role !== "ASSISTANT") continue;
    for (const call of toolCallsOf(message.toolCalls) ?? []) ids.add(call.id);
  }
  for (const approval of approvals) ids.add(approval.toolCallId);
  return ids;
}
