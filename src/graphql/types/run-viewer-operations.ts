// What the request's own credential may do with a run (Run.viewerOperations): a UI such as the
// trace viewer shows Stop or Approve/Reject only when the API key's scopes, or the access
// token's grants, allow cancelRun or decideToolCall on this run (and a message box when ADMIT
// allows steerRun: an access token's only on a run that reads no more than it may, domain/runs/run-direction.ts).
import { ACCESS_OPERATIONS, type AccessOperation, grants } from "../../domain/principal/access-scope.js";
import type { Actor } from "../../domain/principal/principal-service.js";
import { directsRun, RUN_REACH_SELECT, type RunReach } from "../../domain/runs/run-direction.js";
import { builder } from "../builder.js";
import { AccessOperationEnum } from "./access-token.js";
import { RunNode } from "./run.js";

/** The operations that act on one run: every one (ADMIT: steerRun). */
const RUN_OPERATIONS = ACCESS_OPERATIONS;

type Placement = RunReach & { id: string; workspaceId: string | null; conversationId: string | null };

export function runOperationsOf(actor: Actor, run: Placement): AccessOperation[] {
  return RUN_OPERATIONS.filter(
    (operation) =>
      (!actor.scopes || actor.scopes.includes(operation)) &&
      (!actor.access || grants(actor.access, operation, "Run", run.id, run)) &&
      (operation !== "ADMIT" || directsRun(actor, run)),
  );
}

builder.prismaObjectFields(RunNode, (t) => ({
  viewerOperations: t.field({
    type: [AccessOperationEnum],
    description:
      "What the credential of this request may do with this run: READ, SUBSCRIBE, ADMIT (steerRun: an access token only on a run an access token admitted that reads no more than it may READ), CANCEL (cancelRun, pauseRun, resumeRun), DECIDE (decideToolCall), SCORE (createScore) — an API key's scopes, or an access token's grants. A UI shows its message box, Stop, Pause/Resume or Approve/Reject buttons from it.",
    select: { workspaceId: true, conversationId: true, ...RUN_REACH_SELECT },
    resolve: (run, _args, ctx) => runOperationsOf(ctx.actor, run),
  }),
}));
