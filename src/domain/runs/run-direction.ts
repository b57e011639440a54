// Who may direct a run (A6): put a person's words into its conversation (steerRun) or choose the
// arguments a held call of it runs with (decideToolCall with EDIT). A run reads with the reach of
// whoever admitted it (domain/workspace/material-reach.ts): an API key's run reads every
// publication of its principal and may be offered MCP tools, a token's run only the histories of
// the workspaces the token could READ. So an access token directs only a run an access token
// admitted whose every readable workspace it may READ itself — its own runs, and those of a token
// minted again for the same page — since directing any other would have the run read, for the
// token, what the token may not. Whatever does not widen what a run reads — approving or rejecting
// the model's own call, cancelling, pausing, resuming, tags — needs only the token's grant.
import type { RunStatus } from "../../generated/prisma/enums.js";
import { readableWorkspaceIds } from "../principal/access-scope.js";
import { ForbiddenError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import type { Tx } from "../transaction.js";

/** What a run records of the reach it reads with (Run.admittedByToken, Run.tokenReadableWorkspaceIds). */
export type RunReach = { admittedByToken: string | null; tokenReadableWorkspaceIds: readonly string[] };

/** The run's columns holding its reach (RunReach's fields): what runReachFor reads, as RUN_REACH_SELECT selects them. */
const REACH_COLUMNS = "admitted_by_token, token_readable_workspace_ids";

/** The reach as a Prisma select of the run (Run.viewerOperations reads it with the run itself, one statement for a page of runs). */
export const RUN_REACH_SELECT = { admittedByToken: true, tokenReadableWorkspaceIds: true } as const satisfies Record<keyof RunReach, true>;

type ReachRow = { status: RunStatus; admitted_by_token: string | null; token_readable_workspace_ids: string[] };

/**
 * The owner's run's status and reach, its row locked as `lock` says (lock-order.ts: the run row
 * first) — what steering and a decision on a held call read before asking directsRun. Null when
 * the principal has no such run (no row of another principal is locked).
 */
export async function runReachFor(
  tx: Pick<Tx, "$queryRawUnsafe">,
  runId: string,
  ownerId: string,
  lock: "FOR SHARE" | "FOR NO KEY UPDATE",
): Promise<{ status: RunStatus; reach: RunReach } | null> {
  const [row] = await tx.$queryRawUnsafe<ReachRow[]>(`SELECT status, ${REACH_COLUMNS} FROM run WHERE id = $1 AND owner_id = $2 ${lock}`, runId, ownerId);
  if (!row) return null;
  return { status: row.status, reach: { admittedByToken: row.admitted_by_token, tokenReadableWorkspaceIds: row.token_readable_workspace_ids } };
}

/** Whether the actor may direct the run: a whole principal always, an access token only a run that reads no more than it may. */
export function directsRun(actor: Pick<Actor, "access">, run: RunReach): boolean {
  if (!actor.access) return true;
  if (run.admittedByToken === null) return false;
  const readable = new Set(readableWorkspaceIds(actor.access));
  return run.tokenReadableWorkspaceIds.every((id) => readable.has(id));
}

/** Throws ForbiddenError when an access token would direct a run that reads more than it may; `doing` says how. */
export function requireDirects(actor: Pick<Actor, "access">, run: RunReach, doing: string): void {
  if (directsRun(actor, run)) return;
  throw new ForbiddenError(
    `An access token may ${doing} only a run an access token admitted with no more reach than its own: this run reads what this token may not READ (an API key admitted it, or a token with other workspaces).`,
  );
}

/**
 * Throws ForbiddenError unless the actor may put words the model reads next into the run — a
 * steering message, or a rejection's reason (the declined call's result): an API key with the
 * ADMIT scope steerRun needs, an access token on a run it directs (requireDirects).
 */
export function requireSpeaksTo(actor: Pick<Actor, "access" | "scopes">, run: RunReach, doing: string): void {
  requireDirects(actor, run, doing);
  if (actor.scopes && !actor.scopes.includes("ADMIT")) {
    throw new ForbiddenError(
      "This API key may not ADMIT (its scopes lack it): a rejection's reason is the model's next input, as a steering message is, so it rejects without one.",
    );
  }
}
