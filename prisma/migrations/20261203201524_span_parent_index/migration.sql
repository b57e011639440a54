-- CreateIndex
CREATE INDEX "span_parent_id_idx" ON "span"("parent_id");
