-- CreateIndex
CREATE INDEX "artifact_retention_expires_at_idx" ON "artifact"("retention", "expires_at");
