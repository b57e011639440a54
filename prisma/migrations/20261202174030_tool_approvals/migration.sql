-- CreateEnum
CREATE TYPE "ToolApprovalDecision" AS ENUM ('APPROVE', 'REJECT');

-- AlterEnum
ALTER TYPE "RunStatus" ADD VALUE 'WAITING';

-- AlterEnum
ALTER TYPE "SpanEventKind" ADD VALUE 'APPROVAL_REQUESTED';

-- AlterTable
ALTER TABLE "agent_profile" ADD COLUMN     "tool_approvals" JSONB;

-- AlterTable
ALTER TABLE "mcp_server" ADD COLUMN     "require_approval" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "tool_approval" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "tool_call_id" TEXT NOT NULL,
    "tool_name" TEXT NOT NULL,
    "arguments" TEXT NOT NULL,
    "span_id" TEXT,
    "requested_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "decision" "ToolApprovalDecision",
    "decided_by" TEXT,
    "reason" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "started_at" TIMESTAMPTZ(3),

    CONSTRAINT "tool_approval_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "tool_approval_decision_expires_at_idx" ON "tool_approval"("decision", "expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "tool_approval_run_id_message_id_tool_call_id_key" ON "tool_approval"("run_id", "message_id", "tool_call_id");

-- AddForeignKey
ALTER TABLE "tool_approval" ADD CONSTRAINT "tool_approval_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
