-- AlterTable
ALTER TABLE "run" ADD COLUMN     "admitted_by_token" TEXT,
ADD COLUMN     "token_readable_workspace_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];
