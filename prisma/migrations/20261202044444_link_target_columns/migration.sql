-- AlterTable
ALTER TABLE "workspace_link" ADD COLUMN     "artifact_id" TEXT,
ADD COLUMN     "conversation_id" TEXT,
ADD COLUMN     "publication_id" TEXT,
ADD COLUMN     "run_id" TEXT;

-- Existing links: their target in the column of its kind, where the target still exists.
UPDATE "workspace_link" AS l SET "conversation_id" = l."target_id" WHERE l."target_kind" = 'CONVERSATION' AND EXISTS (SELECT 1 FROM "conversation" t WHERE t."id" = l."target_id");
UPDATE "workspace_link" AS l SET "run_id" = l."target_id" WHERE l."target_kind" = 'RUN' AND EXISTS (SELECT 1 FROM "run" t WHERE t."id" = l."target_id");
UPDATE "workspace_link" AS l SET "publication_id" = l."target_id" WHERE l."target_kind" = 'PUBLICATION' AND EXISTS (SELECT 1 FROM "publication" t WHERE t."id" = l."target_id");
UPDATE "workspace_link" AS l SET "artifact_id" = l."target_id" WHERE l."target_kind" = 'ARTIFACT' AND EXISTS (SELECT 1 FROM "artifact" t WHERE t."id" = l."target_id");

-- AddForeignKey
ALTER TABLE "workspace_link" ADD CONSTRAINT "workspace_link_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversation"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_link" ADD CONSTRAINT "workspace_link_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_link" ADD CONSTRAINT "workspace_link_publication_id_fkey" FOREIGN KEY ("publication_id") REFERENCES "publication"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_link" ADD CONSTRAINT "workspace_link_artifact_id_fkey" FOREIGN KEY ("artifact_id") REFERENCES "artifact"("id") ON DELETE SET NULL ON UPDATE CASCADE;
