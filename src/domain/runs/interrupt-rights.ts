// Interrupting a conversation's runs (admitRun's multitask INTERRUPT, a schedule whose overlap is
// INTERRUPT) cancels them as cancelRun does: it takes the same right. An API key needs its CANCEL
// scope besides ADMIT; an access token needs CANCEL on every run it would stop. Checked before
// anything changes: a refusal leaves the runs and the conversation as they were.
import type { Run } from "../../generated/prisma/client.js";
import { ForbiddenError } from "../errors.js";
import { encodeGlobalId } from "../global-id.js";
import { grants } from "../principal/access-scope.js";
import type { Actor } from "../principal/principal-service.js";

/** Refuses a key whose scopes lack CANCEL: it may not `doing` (something that cancels runs). */
export function assertKeyMayCancel(actor: Actor, doing: string): void {
  if (actor.scopes && !actor.scopes.includes("CANCEL")) {
    throw new ForbiddenError(`This API key may not CANCEL (its scopes lack it), so it cannot ${doing}.`);
  }
}

const INTERRUPTING = "admit a run with multitask INTERRUPT, which cancels the conversation's active runs";

/** Refuses a key whose scopes lack CANCEL asking for multitask INTERRUPT, whether or not a run is active. */
export const assertKeyMayInterrupt = (actor: Actor): void => assertKeyMayCancel(actor, INTERRUPTING);

/** Refuses an actor that may not cancel every one of `runs` (the runs an INTERRUPT would stop). */
export function assertMayInterrupt(actor: Actor, runs: readonly Pick<Run, "id" | "workspaceId" | "conversationId">[]): void {
  assertKeyMayInterrupt(actor);
  const scope = actor.access;
  if (!scope) return;
  const refused = runs.find((run) => !grants(scope, "CANCEL", "Run", run.id, run));
  if (refused) {
    throw new ForbiddenError(
      `This access token may not CANCEL run ${encodeGlobalId("Run", refused.id)}, so it cannot admit a run with multitask INTERRUPT, which would cancel it.`,
    );
  }
}
