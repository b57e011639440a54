// The writes to a run's row that are no transition: what the attempt learned on the way (the
// checkpoint revision it was shown). They run in the attempt's fenced transaction.
import type { Tx } from "../transaction.js";

/** The checkpoint revision the run was shown: the one its proposals are checked against. */
export async function recordRevisionSeen(tx: Tx, runId: string, revision: number): Promise<void> {
  await tx.run.update({ where: { id: runId }, data: { checkpointRevisionSeen: revision } });
}
