-- AlterTable
ALTER TABLE "span_event" ADD COLUMN     "preview" TEXT NOT NULL DEFAULT '';

-- Events recorded before previews were stored get theirs now.
UPDATE "span_event" SET "preview" = left("payload", 500);
