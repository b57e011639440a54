-- An access token's idempotency keys are its grants' own (scope): another end user's token may use the
-- same key for its own run. And a principal's access tokens together hold at most half of its queued
-- places (domain/runs/queue-gate.ts): the runs a token admitted (run.admitted_by_token) are counted
-- apart too, on the same two rows, so the gate reads both counts under the one lock it takes.

-- AlterTable
ALTER TABLE "idempotency_key" DROP CONSTRAINT "idempotency_key_pkey",
ADD COLUMN     "scope" TEXT NOT NULL DEFAULT '',
ADD CONSTRAINT "idempotency_key_pkey" PRIMARY KEY ("principal_id", "scope", "key");

-- AlterTable
ALTER TABLE "principal_queue" ADD COLUMN     "token_entered" BIGINT NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "principal_queue_exit" ADD COLUMN     "token_exited" BIGINT NOT NULL DEFAULT 0;

-- The triggers of 20261206150000_principal_queue call this function: a run leaving QUEUED counts
-- on the exit row, one entering it on the entered row; a run an access token admitted on the
-- token columns as well.
CREATE OR REPLACE FUNCTION "principal_queue_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.status = 'QUEUED' THEN
    INSERT INTO principal_queue_exit AS x (principal_id, exited, token_exited)
      VALUES (OLD.owner_id, 1, CASE WHEN OLD.admitted_by_token IS NULL THEN 0 ELSE 1 END)
      ON CONFLICT (principal_id) DO UPDATE SET exited = x.exited + 1, token_exited = x.token_exited + EXCLUDED.token_exited;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'QUEUED' THEN
    INSERT INTO principal_queue AS q (principal_id, entered, token_entered)
      VALUES (NEW.owner_id, 1, CASE WHEN NEW.admitted_by_token IS NULL THEN 0 ELSE 1 END)
      ON CONFLICT (principal_id) DO UPDATE SET entered = q.entered + 1, token_entered = q.token_entered + EXCLUDED.token_entered;
  END IF;
  RETURN NULL;
END
$$;

-- The tokens' runs queued before: counted once the function counts them (in this migration's
-- transaction, no run is written in between).
UPDATE "principal_queue" q SET "token_entered" = t.queued
  FROM (SELECT "owner_id", count(*) AS queued FROM "run" WHERE "status" = 'QUEUED' AND "admitted_by_token" IS NOT NULL GROUP BY "owner_id") t
 WHERE q."principal_id" = t."owner_id";
