-- One end user's access tokens hold at most a quarter of the tokens' share of their principal's
-- queued places (domain/runs/queue-gate.ts). A token's run records the end user it was admitted for
-- (run.admitted_for: the end user createAccessToken named, endUser), and each end user's
-- QUEUED runs are counted on two rows, as the principal's are: entered (locked by admission, after
-- the principal's row) and exited (which a claim holds, and admission only reads).

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "admitted_for" TEXT;

-- CreateTable
CREATE TABLE "end_user_queue" (
    "principal_id" TEXT NOT NULL,
    "end_user" TEXT NOT NULL,
    "entered" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "end_user_queue_pkey" PRIMARY KEY ("principal_id","end_user")
);

-- CreateTable
CREATE TABLE "end_user_queue_exit" (
    "principal_id" TEXT NOT NULL,
    "end_user" TEXT NOT NULL,
    "exited" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "end_user_queue_exit_pkey" PRIMARY KEY ("principal_id","end_user")
);

-- The triggers of 20261206150000_principal_queue call this function: a run leaving QUEUED counts
-- on the exit rows, one entering it on the entered rows; a run an access token admitted on the
-- token columns, and on its end user's rows, as well.
CREATE OR REPLACE FUNCTION "principal_queue_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.status = 'QUEUED' THEN
    INSERT INTO principal_queue_exit AS x (principal_id, exited, token_exited)
      VALUES (OLD.owner_id, 1, CASE WHEN OLD.admitted_by_token IS NULL THEN 0 ELSE 1 END)
      ON CONFLICT (principal_id) DO UPDATE SET exited = x.exited + 1, token_exited = x.token_exited + EXCLUDED.token_exited;
    IF OLD.admitted_for IS NOT NULL THEN
      INSERT INTO end_user_queue_exit AS ux (principal_id, end_user, exited) VALUES (OLD.owner_id, OLD.admitted_for, 1)
        ON CONFLICT (principal_id, end_user) DO UPDATE SET exited = ux.exited + 1;
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'QUEUED' THEN
    INSERT INTO principal_queue AS q (principal_id, entered, token_entered)
      VALUES (NEW.owner_id, 1, CASE WHEN NEW.admitted_by_token IS NULL THEN 0 ELSE 1 END)
      ON CONFLICT (principal_id) DO UPDATE SET entered = q.entered + 1, token_entered = q.token_entered + EXCLUDED.token_entered;
    IF NEW.admitted_for IS NOT NULL THEN
      INSERT INTO end_user_queue AS u (principal_id, end_user, entered) VALUES (NEW.owner_id, NEW.admitted_for, 1)
        ON CONFLICT (principal_id, end_user) DO UPDATE SET entered = u.entered + 1;
    END IF;
  END IF;
  RETURN NULL;
END
$$;
