-- A schedule follows the API key that created, last updated or resumed it: revoking the key pauses
-- it (the revocation pauses the key's schedules by this index; a fire looks the key up). Existing
-- schedules follow none (null) and keep firing.

-- AlterTable
ALTER TABLE "schedule" ADD COLUMN     "api_key_id" TEXT;

-- CreateIndex
CREATE INDEX "schedule_api_key_id_idx" ON "schedule"("api_key_id");
