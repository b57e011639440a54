// A principal's bounded settings (API keys, schedules, MCP servers, skills, webhooks, score configs) are counted
// and then written in one transaction. Two such transactions side by side would each count the
// rows before the other's insert and pass the bound together; locking the principal's row first
// makes the second count wait for the first to commit, so it sees that insert.
import type { Tx } from "../transaction.js";

/**
 * Locks the principal's row until the transaction ends: every count of its rows under the lock
 * sees the inserts of earlier holders. FOR NO KEY UPDATE lets rows that only reference the
 * principal (a run's, a span's) be written meanwhile.
 */
export async function lockPrincipalRow(tx: Tx, principalId: string): Promise<void> {
  await tx.$queryRawUnsafe("SELECT id FROM principal WHERE id = $1 FOR NO KEY UPDATE", principalId);
}
