// What a run is told of a workspace it may not read: a run an access token admitted with ADMIT but
// not READ on its workspace (domain/workspace/material-reach.ts). It is told the truth — the token
// that admitted it may not read the workspace — and nothing of the workspace itself: neither its
// title, goal, checkpoint, revision or history, nor whether it still exists. Such a run proposes no
// checkpoint: a proposal builds on what the checkpoint holds, which a person's client would need
// READ to see. The check reads no row.
import { reachesWorkspace, reachOfRun } from "../../domain/workspace/material-reach.js";
import type { ToolRun } from "../ports/tool.js";

type RunReach = Pick<ToolRun, "workspaceId" | "admittedByToken" | "tokenReadableWorkspaceIds">;

/** Whether the run has a workspace its admitting token may not READ. */
export const workspaceUnreadable = (run: RunReach): boolean => run.workspaceId !== null && !reachesWorkspace(reachOfRun(run), run.workspaceId);

const WHY = "the access token that admitted it has no READ there";

/** The workspace context's line for such a run. */
export const UNREADABLE_WORKSPACE_CONTEXT = `This run may not read the workspace it was admitted in (${WHY}): its catalog and checkpoint are not shown, and it cannot propose a checkpoint.`;

/** A workspace tool's answer to such a run: what it may not do, and why. */
export const unreadableWorkspace = (consequence: string): string => `This run may not read its workspace (${WHY}), so ${consequence}.`;

/** Why a proposal such a run still holds (made before proposals needed READ) is not applied. */
export const UNREADABLE_WORKSPACE_PROPOSAL = "the access token that admitted the run has no READ on its workspace";
