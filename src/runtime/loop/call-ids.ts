// The ids of one model message's tool calls as Dossier stores them: unique within the message.
// A model (or a hostile server pretending to be one) may repeat an id or leave it empty; results,
// approvals and spill handles are keyed on it, so two calls sharing one id would share a result
// or a decision — approving one call would run another. A repeated or missing id gets one of
// Dossier's own, derived from the call's position and the message's ids only, so the same reply
// always gets the same ids (an attempt that resumes reads them from the log in any case).
import { createHash } from "node:crypto";
import type { ToolCall } from "../ports/model.js";

/** The prefix of the ids Dossier gives calls whose own id is missing or repeated. */
export const OWN_CALL_ID_PREFIX = "dossier_call_";

/** The calls with unique, non-empty ids: the first call keeps a repeated id, later ones get Dossier's own. */
export function withUniqueCallIds(calls: readonly ToolCall[]): ToolCall[] {
  const seen = new Set<string>();
  const given = new Set(calls.map((call) => call.id));
  const seed = createHash("sha256")
    .update(JSON.stringify(calls.map((call) => call.id)))
    .digest("hex")
    .slice(0, 12);
  return calls.map((call, index) => {
    if (call.id !== "" && !seen.has(call.id)) {
      seen.add(call.id);
      return call;
    }
    let id = `${OWN_CALL_ID_PREFIX}${seed}_${index}`;
    // A model that already used this very id elsewhere in the message keeps its own.
    for (let n = 2; given.has(id) || seen.has(id); n += 1) id = `${OWN_CALL_ID_PREFIX}${seed}_${index}_${n}`;
    seen.add(id);
    return { ...call, id };
  });
}

/** Whether every call of the message has its own non-empty id. */
export const hasUniqueCallIds = (calls: readonly ToolCall[]): boolean =>
  calls.every((call) => call.id !== "") && new Set(calls.map((call) => call.id)).size === calls.length;
