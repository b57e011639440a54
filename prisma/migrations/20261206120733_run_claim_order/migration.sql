-- CreateIndex
CREATE INDEX "run_owner_id_status_priority_created_at_id_idx" ON "run"("owner_id", "status", "priority" DESC, "created_at", "id");
