// The one lock order of every transaction that touches a run and its workspace:
//
//   1. the run rows, in id order (FOR NO KEY UPDATE — what an attempt's fence takes first);
//   2. then the workspace row (what publishing an answer, applying a checkpoint proposal, admitting
//      into a workspace, archiving and deleting it lock);
//   3. a principal's queue rows after the run rows (queue-gate.ts), its exit row before its entered
//      row: the trigger of a write that moves a run into or out of QUEUED takes one after that run's
//      row, an admission takes the entered row after the runs it cancels (and their exit row); no
//      one holding either waits for a run row, nor for a workspace row held by one who wants it
//      (goal updates, archiving and deleting never move a run into or out of QUEUED) — but a
//      schedule's catch-up of several INTERRUPT fires in one transaction, which a deadlock rolls
//      back for its scheduler to fire again later (schedule-firing.ts), and two claims taking
//      several principals' exit rows in other orders, whose victim claims again (claim.ts).
//
// A settling run holds its run row (the fence) and then links its answer into the workspace. A
// transaction that took the workspace first and a run row second would deadlock with it: deleting
// a workspace is one (the goal versions' ON DELETE SET NULL updates every run admitted with them),
// so it locks those runs first (WorkspaceService.deleteWorkspace, in domain/workspace, which this
// folder's admission imports), then the workspace. Cancelling a run locks
// the run row before anything else (lockRun); admission that interrupts a conversation's run
// cancels it after the workspace only with FOR SHARE on it, which a settling run's link does not
// wait for. The fence's check (holder.ts) is the first statement of every write of an attempt.
import type { Tx } from "../transaction.js";
import type { TransitionRun } from "./apply-transition.js";

type LockedRow = { id: string; owner_id: string; conversation_id: string; workspace_id: string | null; lease_owner: string | null };

/** Locks the run row (step 1) and returns what a transition needs of it; null when there is no such run. */
export async function lockRun(tx: Tx, runId: string): Promise<TransitionRun | null> {
  const [row] = await tx.$queryRawUnsafe<LockedRow[]>(
    "SELECT id, owner_id, conversation_id, workspace_id, lease_owner FROM run WHERE id = $1 FOR NO KEY UPDATE",
    runId,
  );
  return row ? { id: row.id, ownerId: row.owner_id, conversationId: row.conversation_id, workspaceId: row.workspace_id, leaseOwner: row.lease_owner } : null;
}
