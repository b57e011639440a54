-- A principal's access tokens together hold at most half of its running places (domain/runs/
-- claim-statement.ts): a claim lists a principal's queued runs its API keys admitted apart from
-- those its tokens admitted (run.admitted_by_token), each through an index of its own in the
-- claim's order, so the tokens' backlog, while they hold their share, costs a claim of the keys'
-- runs nothing, and the keys' backlog costs a claim of the tokens' runs nothing.
CREATE INDEX "run_queued_key_idx" ON "run"("owner_id", "priority" DESC, "created_at", "id") WHERE "status" = 'QUEUED' AND "admitted_by_token" IS NULL;
CREATE INDEX "run_queued_token_idx" ON "run"("owner_id", "priority" DESC, "created_at", "id") WHERE "status" = 'QUEUED' AND "admitted_by_token" IS NOT NULL;
