-- CreateTable
CREATE TABLE "principal_queue" (
    "principal_id" TEXT NOT NULL,
    "queued" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "principal_queue_pkey" PRIMARY KEY ("principal_id")
);

-- Each principal's count of QUEUED runs (MAX_QUEUED_RUNS_PER_PRINCIPAL, domain/runs/queue-gate.ts),
-- kept by the database itself in the transaction of every write that moves a run into or out of
-- QUEUED: an admission's insert, a claim, a pause, a resume, a cancellation, a delete. Admission
-- locks the principal's row first and goes on only below the limit; the insert's count is then
-- added under that lock, so a concurrent admission sees it once it gets the row. Not deferred:
-- several admissions in one transaction (a schedule's fires) each see the ones before. Only rows
-- whose QUEUED-ness changes call the function (the WHEN conditions): lease renewals, usage and
-- labels cost nothing.
CREATE FUNCTION "principal_queue_count"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.status = 'QUEUED' THEN
    UPDATE principal_queue SET queued = GREATEST(queued - 1, 0) WHERE principal_id = OLD.owner_id;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'QUEUED' THEN
    INSERT INTO principal_queue AS q (principal_id, queued) VALUES (NEW.owner_id, 1)
      ON CONFLICT (principal_id) DO UPDATE SET queued = q.queued + 1;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER "principal_queue_insert" AFTER INSERT ON "run"
  FOR EACH ROW WHEN (NEW.status = 'QUEUED') EXECUTE FUNCTION "principal_queue_count"();
CREATE TRIGGER "principal_queue_update" AFTER UPDATE ON "run"
  FOR EACH ROW
  WHEN ((OLD.status = 'QUEUED') <> (NEW.status = 'QUEUED') OR (NEW.status = 'QUEUED' AND OLD.owner_id <> NEW.owner_id))
  EXECUTE FUNCTION "principal_queue_count"();
CREATE TRIGGER "principal_queue_delete" AFTER DELETE ON "run"
  FOR EACH ROW WHEN (OLD.status = 'QUEUED') EXECUTE FUNCTION "principal_queue_count"();

-- The runs queued before: counted once the triggers hold the run table (in this migration's
-- transaction, no run is written in between).
INSERT INTO "principal_queue" ("principal_id", "queued")
SELECT "owner_id", count(*)::int FROM "run" WHERE "status" = 'QUEUED' GROUP BY "owner_id";
