-- AlterEnum
ALTER TYPE "SpanEventKind" ADD VALUE 'TRUNCATED';

-- AlterTable
ALTER TABLE "trace" ADD COLUMN     "records" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "truncated_at" TIMESTAMPTZ(3);
