-- AlterTable
ALTER TABLE "run" ADD COLUMN     "metadata" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "metadata_pairs" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "tags" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateIndex
CREATE INDEX "run_owner_id_status_created_at_id_idx" ON "run"("owner_id", "status", "created_at", "id");

-- CreateIndex
CREATE INDEX "run_owner_id_agent_created_at_id_idx" ON "run"("owner_id", "agent", "created_at", "id");

-- CreateIndex
CREATE INDEX "run_workspace_id_created_at_id_idx" ON "run"("workspace_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "run_tags_idx" ON "run" USING GIN ("tags");

-- CreateIndex
CREATE INDEX "run_metadata_pairs_idx" ON "run" USING GIN ("metadata_pairs");
