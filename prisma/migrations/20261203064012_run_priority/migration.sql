-- AlterTable
ALTER TABLE "run" ADD COLUMN     "priority" INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "run_status_owner_id_idx" ON "run"("status", "owner_id");
