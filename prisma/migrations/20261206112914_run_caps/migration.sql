-- AlterTable
ALTER TABLE "api_key" ADD COLUMN     "run_caps" JSONB;

-- AlterTable
ALTER TABLE "schedule" ADD COLUMN     "run_caps" JSONB;
