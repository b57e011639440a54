// A schedule follows the API key that created, last updated or resumed it (Schedule.apiKeyId; null
// for a credential without a key — a sign-in, the development principal — whose schedules fire as
// before). Revoking that key stops its schedules, as it refuses the key's access tokens, twice
// over: the revocation (revokeApiKey, `npm run key:revoke`) pauses the key's schedules in its own
// transaction, so their owner sees them paused (and their webhooks hear SCHEDULE_PAUSED) at once;
// and every fire (its timer, triggerSchedule) looks the key up in the statement that locks the
// schedule, so a schedule saved while its key was being revoked pauses at its next fire instead of
// admitting. resumeSchedule with a valid credential ties the schedule to that credential and it
// fires again; updateSchedule ties it too (a paused schedule stays paused until resumed).
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { KeyRevocationEffects } from "../principal/principal-service.js";
import { recordSchedulePausedEvent, type WebhookWake } from "../webhooks/webhook-events.js";

type Tx = Prisma.TransactionClient;

/** The pausedReason of a schedule whose key was revoked. */
export const KEY_REVOKED_REASON = "the API key that created, last updated or resumed it was revoked";
/** The reason of a triggered fire of such a schedule, recorded FAILED. */
export const KEY_REVOKED_FIRE_REASON =
  "the API key that created, last updated or resumed the schedule was revoked: resume or update it with a valid credential";

/**
 * SQL for the `schedule` row in scope: whether the key it follows was revoked (or is gone). One
 * index lookup of the key, in the statement that locks the schedule: a fire costs no statement more.
 */
export const KEY_REVOKED_SQL =
  "(schedule.api_key_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM api_key k WHERE k.id = schedule.api_key_id AND k.revoked_at IS NULL))";

/** The revocation's part: pauses the key's schedules that still fire (one UPDATE) and tells their owners' webhooks. */
export async function pauseSchedulesOfRevokedKey(tx: Tx, keyId: string, wake: WebhookWake): Promise<number> {
  const paused = await tx.$queryRawUnsafe<{ id: string; owner_id: string; workspace_id: string }[]>(
    `UPDATE schedule SET paused = true, paused_reason = $2, updated_at = now()
      WHERE api_key_id = $1 AND NOT paused RETURNING id, owner_id, workspace_id`,
    keyId,
    KEY_REVOKED_REASON,
  );
  for (const row of paused) {
    const schedule = { id: row.id, ownerId: row.owner_id, workspaceId: row.workspace_id, pausedReason: KEY_REVOKED_REASON, lastRunId: null };
    await recordSchedulePausedEvent(tx, schedule, wake);
  }
  return paused.length;
}

/** The revocation's effects on schedules, for PrincipalService (`revoked`). */
export function pauseSchedulesOnRevocation(events: EventPublisher): KeyRevocationEffects {
  return (tx, keyId, after) => pauseSchedulesOfRevokedKey(tx, keyId, { events, after });
}

/** A fire's part: the locked schedule whose key was revoked pauses itself (when it was not paused yet) instead of admitting. */
export async function pauseForRevokedKey(
  tx: Tx,
  schedule: { id: string; ownerId: string; workspaceId: string; paused: boolean },
  wake: WebhookWake,
): Promise<void> {
  if (schedule.paused) return;
  await tx.schedule.update({ where: { id: schedule.id }, data: { paused: true, pausedReason: KEY_REVOKED_REASON } });
  await recordSchedulePausedEvent(tx, { ...schedule, pausedReason: KEY_REVOKED_REASON, lastRunId: null }, wake);
}
