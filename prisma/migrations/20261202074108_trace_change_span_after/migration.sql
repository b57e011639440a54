-- AlterTable
ALTER TABLE "trace_change" ADD COLUMN     "span_after" JSONB;
