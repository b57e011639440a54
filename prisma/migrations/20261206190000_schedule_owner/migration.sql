-- The schedulers give the owners of due schedules turns: each claim takes one owner's oldest due
-- schedule, and createSchedule counts the owner's schedules (MAX_SCHEDULES_PER_PRINCIPAL).

-- CreateIndex
CREATE INDEX "schedule_owner_id_paused_next_fire_at_idx" ON "schedule"("owner_id", "paused", "next_fire_at");
