// A schedule follows the API key that created, last updated or resumed it (Schedule.apiKeyId; null
// for a credential without a key — a sign-in, the development principal — whose schedules fire as
// before). Revoking that key stops its schedules, as it refuses the key's access tokens, twice
// over: once the revocation (revokeApiKey, `npm run key:revoke`) committed — the key refused from
// then on, whatever follows — the key's schedules are paused, so their owner sees them paused (and
// their webhooks hear SCHEDULE_PAUSED); a schedule a fire holds at that moment is paused once that
// fire committed, without the revocation waiting for it. And every fire (its timer,
// triggerSchedule) looks the key up once it holds the schedule, so a schedule saved while its key
// was being revoked, or not paused yet, pauses at its next fire instead of admitting.
// resumeSchedule with a valid credential ties the schedule to that credential and it fires again;
// updateSchedule ties it too (a paused schedule stays paused until resumed).
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import type { Logger } from "../../logger.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
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
 * index lookup of the key, in the statement that claims a due schedule (SKIP LOCKED: it waits for no
 * row); a triggered fire, which may wait for its schedule, reads it in a statement of its own once
 * it holds the schedule.
 */
export const KEY_REVOKED_SQL =
  "(schedule.api_key_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM api_key k WHERE k.id = schedule.api_key_id AND k.revoked_at IS NULL))";

/** A fire holding one of the key's schedules is waited for this long at most (as long as a fire may take). */
const WAITING_TRANSACTION = { maxWait: 10_000, timeout: 60_000 };

/**
 * Pauses the key's schedules that still fire (one UPDATE) and tells their owners' webhooks; with
 * `skipLocked`, leaves the schedules another transaction holds (a fire in progress) as they are.
 * Returns how many it paused, and whether it left any.
 */
export async function pauseSchedulesOfRevokedKey(tx: Tx, keyId: string, wake: WebhookWake, skipLocked = false): Promise<{ paused: number; left: boolean }> {
  const paused = await tx.$queryRawUnsafe<{ id: string; owner_id: string; workspace_id: string }[]>(
    `UPDATE schedule SET paused = true, paused_reason = $2, updated_at = now()
      WHERE id IN (SELECT id FROM schedule WHERE api_key_id = $1 AND NOT paused FOR UPDATE${skipLocked ? " SKIP LOCKED" : ""})
      RETURNING id, owner_id, workspace_id`,
    keyId,
    KEY_REVOKED_REASON,
  );
  for (const row of paused) {
    const schedule = { id: row.id, ownerId: row.owner_id, workspaceId: row.workspace_id, pausedReason: KEY_REVOKED_REASON, lastRunId: null };
    await recordSchedulePausedEvent(tx, schedule, wake);
  }
  const left = skipLocked ? (await tx.schedule.count({ where: { apiKeyId: keyId, paused: false } })) > 0 : false;
  return { paused: paused.length, left };
}

/**
 * What follows a committed revocation, for PrincipalService (`revoked`), best effort: the key's
 * schedules no fire holds are paused before the revocation answers; those a fire holds, once it
 * committed, in the background. A failure is logged — the key's schedules then pause at their next
 * fire, which looks the key up.
 */
export function pauseSchedulesOnRevocation(deps: { prisma: PrismaClient; events: EventPublisher; logger?: Logger }): KeyRevocationEffects {
  const pass = async (keyId: string, skipLocked: boolean) => {
    const after: AfterCommit = [];
    const done = await deps.prisma.$transaction(
      (tx) => pauseSchedulesOfRevokedKey(tx, keyId, { events: deps.events, after }, skipLocked),
      skipLocked ? undefined : WAITING_TRANSACTION,
    );
    runAfterCommit(after);
    return done;
  };
  const failed = (keyId: string) => (error: unknown) =>
    deps.logger?.warn("pausing the schedules of a revoked API key failed: they pause at their next fire", { keyId, error: String(error) });
  return async (keyId) => {
    try {
      const { left } = await pass(keyId, true);
      if (left) void pass(keyId, false).catch(failed(keyId));
    } catch (error) {
      failed(keyId)(error);
    }
  };
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
