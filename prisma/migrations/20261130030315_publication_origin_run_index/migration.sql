-- CreateIndex
CREATE INDEX "publication_version_origin_run_id_idx" ON "publication_version"("origin_run_id");
