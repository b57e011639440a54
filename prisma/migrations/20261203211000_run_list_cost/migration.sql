-- AlterTable
ALTER TABLE "run_list_change" ADD COLUMN     "cost_after" DECIMAL(20,10) NOT NULL DEFAULT 0,
ADD COLUMN     "cost_before" DECIMAL(20,10);

-- The run's cost (and whether a model call of it was unpriced) is a list change too (RunFilter.costAbove, RunOrder.COST_DESC): it is logged
-- with its value before and after, like status, tags and metadata. A model call adds to it in
-- the transaction that ends its span, separately from the tokens it used, so a list ordered by
-- cost learns of each change.
CREATE OR REPLACE FUNCTION "run_list_change_log"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  next_seq INTEGER;
BEGIN
  INSERT INTO run_list_sequence AS s (principal_id, last_seq) VALUES (NEW.owner_id, 1)
    ON CONFLICT (principal_id) DO UPDATE SET last_seq = s.last_seq + 1
    RETURNING last_seq INTO next_seq;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO run_list_change (principal_id, seq, run_id, at, status_after, tags_after, metadata_after, cost_after)
      VALUES (NEW.owner_id, next_seq, NEW.id, clock_timestamp(), NEW.status, NEW.tags, NEW.metadata, NEW.cost);
  ELSE
    INSERT INTO run_list_change (principal_id, seq, run_id, at, status_before, status_after, tags_before, tags_after, metadata_before, metadata_after, cost_before, cost_after)
      VALUES (NEW.owner_id, next_seq, NEW.id, clock_timestamp(), OLD.status, NEW.status, OLD.tags, NEW.tags, OLD.metadata, NEW.metadata, OLD.cost, NEW.cost);
  END IF;
  IF next_seq % 100 = 0 THEN
    DELETE FROM run_list_change WHERE principal_id = NEW.owner_id AND seq <= next_seq - 10000;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER "run_list_change_log_update" ON "run";
CREATE CONSTRAINT TRIGGER "run_list_change_log_update" AFTER UPDATE ON "run"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.metadata IS DISTINCT FROM NEW.metadata OR OLD.tokens_used IS DISTINCT FROM NEW.tokens_used
        OR OLD.cost IS DISTINCT FROM NEW.cost OR OLD.cost_unpriced IS DISTINCT FROM NEW.cost_unpriced)
  EXECUTE FUNCTION "run_list_change_log"();

-- Changes logged before: the run's cost as it is now (a bounded log, at most 10,000 per principal).
UPDATE "run_list_change" c SET "cost_after" = r."cost",
    "cost_before" = CASE WHEN c."status_before" IS NULL THEN NULL ELSE r."cost" END
  FROM "run" r WHERE r."id" = c."run_id";
