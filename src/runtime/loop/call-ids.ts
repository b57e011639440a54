// The ids of a model message's tool calls as Dossier stores them: unique within the run. A model
// (or a hostile server pretending to be one) may repeat an id — within one message, or one an
// earlier message of the run already used — or leave it empty; results, approvals and spill
// handles are keyed on it, and a person's decision names it (decideToolCall), so two calls sharing
// one id would share a result or a decision: approving one call, or a decision made on a call
// that was since answered, would run another. A repeated or missing id gets one of Dossier's own,
// recorded everywhere the call is (the log, the trace, the approval request): the model is shown
// it with the call and its result in the next request. It is derived from the call's position,
// the message's ids and the ids the run used before only, so the same reply always gets the same
// ids (an attempt that resumes reads them from the log in any case).
import { createHash } from "node:crypto";
import type { ToolCall } from "../ports/model.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import { toolCallsOf } from "../../domain/json-columns.js";

/** The prefix of the ids Dossier gives calls whose own id is missing or repeated. */
export const OWN_CALL_ID_PREFIX = "dossier_call_";

const NONE: ReadonlySet<string> = new Set();

/**
 * The calls with non-empty ids unique within the message and unused by the run before (`used`):
 * the first call keeps an id repeated within the message, later ones get Dossier's own, and so
 * does a call whose id the run already used.
 */
export function withUniqueCallIds(calls: readonly ToolCall[], used: ReadonlySet<string> = NONE): ToolCall[] {
  const seen = new Set<string>();
  const given = new Set(calls.map((call) => call.id));
  const seed = createHash("sha256")
    .update(JSON.stringify(calls.map((call) => call.id)))
    .digest("hex")
    .slice(0, 12);
  const taken = (id: string) => given.has(id) || seen.has(id) || used.has(id);
  return calls.map((call, index) => {
    if (call.id !== "" && !seen.has(call.id) && !used.has(call.id)) {
      seen.add(call.id);
      return call;
    }
    let id = `${OWN_CALL_ID_PREFIX}${seed}_${index}`;
    // A model that already used this very id elsewhere in the message (or the run did) keeps its own.
    for (let n = 2; taken(id); n += 1) id = `${OWN_CALL_ID_PREFIX}${seed}_${index}_${n}`;
    seen.add(id);
    return { ...call, id };
  });
}

/** Whether every call of the message has its own non-empty id, unused by the run before (`used`). */
export const hasUniqueCallIds = (calls: readonly ToolCall[], used: ReadonlySet<string> = NONE): boolean =>
  calls.every((call) => call.id !== "" && !used.has(call.id)) && new Set(calls.map((call) => call.id)).size === calls.length;

/**
 * The ids a run has used: its logged calls' and those of its approval requests (a cost
 * confirmation's among them). A new call or confirmation of the run gets none of them.
 */
export function callIdsOfRun(runLog: readonly LoggedMessage[], approvals: Iterable<{ toolCallId: string }>): Set<string> {
  const ids = new Set<string>();
  for (const message of runLog) {
    if (message.role !== "ASSISTANT") continue;
    for (const call of toolCallsOf(message.toolCalls) ?? []) ids.add(call.id);
  }
  for (const approval of approvals) ids.add(approval.toolCallId);
  return ids;
}
