-- AlterEnum
ALTER TYPE "ToolApprovalDecision" ADD VALUE 'EDIT';

-- AlterTable
ALTER TABLE "tool_approval" ADD COLUMN     "edited_arguments" TEXT,
ADD COLUMN     "input_schema" TEXT;
