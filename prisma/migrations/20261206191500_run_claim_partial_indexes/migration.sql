-- The claim's two kinds of RUNNING runs (claim-statement.ts), each read through an index of its
-- own, so neither kind's number costs a claim reading the other:
-- runs holding a running slot of their principal's cap: RUNNING under a lease a worker owns,
-- expired or not (lease-expired.ts HOLDING_SLOT). A claim counts them per principal and takes over
-- those whose lease expired.
CREATE INDEX "run_slot_holder_idx" ON "run"("owner_id", "lease_expires_at") WHERE "status" = 'RUNNING' AND "lease_owner" IS NOT NULL;
-- Runs to resume (handed back, or every held tool call decided): RUNNING with no lease owner,
-- however many one principal has. A claim finds their principals and each one's next few runs in
-- its order, as for queued runs.
CREATE INDEX "run_to_resume_idx" ON "run"("owner_id", "priority" DESC, "created_at", "id") WHERE "status" = 'RUNNING' AND "lease_owner" IS NULL;
