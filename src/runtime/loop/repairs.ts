// R7: tool calls left without results by an interrupted attempt are recorded as repaired, once.
// The model's view places each neutral note right after its call (memory/repair.ts); this entry
// is the log's record that the call was interrupted.
import { unrecordedInterruptions } from "../memory/conversation-log.js";
import { repairNote } from "../memory/repair.js";
import type { AttemptScope } from "./attempt.js";

/** Records the calls of the log left without a result, but those in `held` (waiting for a decision), as repaired. */
export async function recordRepairs(scope: AttemptScope, held: ReadonlySet<string>): Promise<void> {
  // A call held for a decision did not run and will be answered: it is not dangling.
  const dangling = unrecordedInterruptions(scope.log.entries).filter((call) => !held.has(call.id));
  if (dangling.length === 0) return;
  await scope.log.append(
    scope.write,
    dangling.map((call) => ({ role: "REPAIR", toolCallId: call.id, toolName: call.name, content: repairNote(call) })),
  );
  await scope.sink.event(scope.span, "REPAIR", { repaired: dangling.map((call) => ({ id: call.id, name: call.name })) });
}
