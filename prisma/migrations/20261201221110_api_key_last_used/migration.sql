-- AlterTable
ALTER TABLE "api_key" ADD COLUMN     "last_used_at" TIMESTAMPTZ(3);
