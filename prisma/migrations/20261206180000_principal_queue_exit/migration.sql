-- Each principal's QUEUED runs counted on two rows: those that entered QUEUED (principal_queue,
-- which admission locks) and those that left it (principal_queue_exit). A claim takes its runs out
-- of QUEUED in a transaction held to its commit; with one row it held every admission of the same
-- principal until then. Now it holds only the exit row, which admission reads without waiting: an
-- exit count read before a claim committed is one too small, so the count of queued runs admission
-- sees is never below the true one (it may refuse at the limit while a claim commits, never admit
-- past it).

-- AlterTable
ALTER TABLE "principal_queue" RENAME COLUMN "queued" TO "entered";
ALTER TABLE "principal_queue" ALTER COLUMN "entered" SET DATA TYPE BIGINT;

-- CreateTable
CREATE TABLE "principal_queue_exit" (
    "principal_id" TEXT NOT NULL,
    "exited" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "principal_queue_exit_pkey" PRIMARY KEY ("principal_id")
);

-- The triggers of 20261206150000_principal_queue call this function: a run leaving QUEUED counts
-- on the exit row, one entering it on the entered row.
CREATE OR REPLACE FUNCTION "principal_queue_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.status = 'QUEUED' THEN
    INSERT INTO principal_queue_exit AS x (principal_id, exited) VALUES (OLD.owner_id, 1)
      ON CONFLICT (principal_id) DO UPDATE SET exited = x.exited + 1;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'QUEUED' THEN
    INSERT INTO principal_queue AS q (principal_id, entered) VALUES (NEW.owner_id, 1)
      ON CONFLICT (principal_id) DO UPDATE SET entered = q.entered + 1;
  END IF;
  RETURN NULL;
END
$$;
