-- CreateTable
CREATE TABLE "run_list_sequence" (
    "principal_id" TEXT NOT NULL,
    "last_seq" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "run_list_sequence_pkey" PRIMARY KEY ("principal_id")
);

-- CreateTable
CREATE TABLE "run_list_change" (
    "principal_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "run_id" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "status_before" "RunStatus",
    "status_after" "RunStatus" NOT NULL,
    "tags_before" TEXT[],
    "tags_after" TEXT[],
    "metadata_before" JSONB,
    "metadata_after" JSONB NOT NULL,

    CONSTRAINT "run_list_change_pkey" PRIMARY KEY ("principal_id","seq")
);

-- CreateIndex
CREATE INDEX "run_list_change_run_id_idx" ON "run_list_change"("run_id");

-- AddForeignKey
ALTER TABLE "run_list_change" ADD CONSTRAINT "run_list_change_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The run-list change log (runsChanged), written by the database itself: every write of a run
-- row — admission, claim, each transition, token usage, tags — is logged in its own transaction
-- without a statement of the application's. The trigger is deferred to the commit, so a
-- principal's position row is locked only while the transaction commits (no lock is held across
-- the run's work, none is taken before the run rows: lock-order.ts), and seq follows commit order:
-- a reader that saw seq n has seen every change before it. Other columns (lease, attempt, model)
-- are not a list change. Every 100th change prunes the principal's log to its latest 10,000.
CREATE FUNCTION "run_list_change_log"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  next_seq INTEGER;
BEGIN
  INSERT INTO run_list_sequence AS s (principal_id, last_seq) VALUES (NEW.owner_id, 1)
    ON CONFLICT (principal_id) DO UPDATE SET last_seq = s.last_seq + 1
    RETURNING last_seq INTO next_seq;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO run_list_change (principal_id, seq, run_id, at, status_after, tags_after, metadata_after)
      VALUES (NEW.owner_id, next_seq, NEW.id, clock_timestamp(), NEW.status, NEW.tags, NEW.metadata);
  ELSE
    INSERT INTO run_list_change (principal_id, seq, run_id, at, status_before, status_after, tags_before, tags_after, metadata_before, metadata_after)
      VALUES (NEW.owner_id, next_seq, NEW.id, clock_timestamp(), OLD.status, NEW.status, OLD.tags, NEW.tags, OLD.metadata, NEW.metadata);
  END IF;
  IF next_seq % 100 = 0 THEN
    DELETE FROM run_list_change WHERE principal_id = NEW.owner_id AND seq <= next_seq - 10000;
  END IF;
  RETURN NULL;
END
$$;

-- Two triggers, so that an update no list sees (a lease renewed, a model recorded) queues nothing:
-- the condition is checked when the row is written, the function runs at commit.
CREATE CONSTRAINT TRIGGER "run_list_change_log_insert" AFTER INSERT ON "run"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "run_list_change_log"();
CREATE CONSTRAINT TRIGGER "run_list_change_log_update" AFTER UPDATE ON "run"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.metadata IS DISTINCT FROM NEW.metadata OR OLD.tokens_used IS DISTINCT FROM NEW.tokens_used)
  EXECUTE FUNCTION "run_list_change_log"();
