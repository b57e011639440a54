-- AlterTable
ALTER TABLE "publication_version" ADD COLUMN     "changes_added_lines" INTEGER,
ADD COLUMN     "changes_diff" TEXT,
ADD COLUMN     "changes_diff_truncated" BOOLEAN,
ADD COLUMN     "changes_previous_version" INTEGER,
ADD COLUMN     "changes_removed_lines" INTEGER;

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "continues_publication_id" TEXT;

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_continues_publication_id_fkey" FOREIGN KEY ("continues_publication_id") REFERENCES "publication"("id") ON DELETE SET NULL ON UPDATE CASCADE;
