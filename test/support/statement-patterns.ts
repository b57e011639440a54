// The shapes of the statements that tests counting a run's SQL tell apart in a statement log.

/**
 * The worker's passes, which run on their own clock (claims, sweeps, schedules, lease renewals) beside the runs:
 * how many of them fall within a run depends on timing, not on the run.
 */
export const WORKER_PASSES =
  /WITH (RECURSIVE )?running AS|^\s*UPDATE run SET lease_expires_at|FROM "public"\."(tool_approval|schedule)"|FROM tool_approval WHERE decision IS NULL AND expires_at <=|^\s*SELECT "t0"\."id", "t0"\."owner_id" AS "ownerId", "t0"\."conversation_id"/;
/** An attempt's transaction opens with its fence's check (the passes commit transactions of their own). */
export const FENCE_CHECK = /^\s*SELECT 1 FROM run WHERE id = \$1 AND attempt = \$2::int/;
export const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK\b|-- Implicit "(BEGIN|COMMIT|ROLLBACK)")/i;
export const COMMIT = /^\s*(COMMIT|-- Implicit "COMMIT")/i;
