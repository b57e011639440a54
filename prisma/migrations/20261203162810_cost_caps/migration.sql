-- CreateEnum
CREATE TYPE "RunStopReason" AS ENUM ('ANSWERED', 'CONCLUDED', 'CANCELLED', 'STOPPED_AFTER_TURN', 'DEADLINE', 'BUDGET', 'MAX_TURNS', 'TOKEN_BUDGET', 'CONTEXT_OVERFLOW', 'MODEL_ERROR', 'INTERNAL_ERROR');

-- CreateEnum
CREATE TYPE "ApprovalKind" AS ENUM ('TOOL_CALL', 'COST_CONFIRMATION');

-- AlterTable
ALTER TABLE "principal" ADD COLUMN     "daily_cost_limit" DECIMAL(20,10);

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "confirm_cost_above" DECIMAL(20,10),
ADD COLUMN     "max_cost" DECIMAL(20,10),
ADD COLUMN     "stop_reason" "RunStopReason";

-- AlterTable
ALTER TABLE "tool_approval" ADD COLUMN     "kind" "ApprovalKind" NOT NULL DEFAULT 'TOOL_CALL';

-- AlterTable
ALTER TABLE "workspace" ADD COLUMN     "monthly_budget" DECIMAL(20,10);

-- CreateTable
CREATE TABLE "principal_daily_cost" (
    "principal_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "cost" DECIMAL(20,10) NOT NULL DEFAULT 0,

    CONSTRAINT "principal_daily_cost_pkey" PRIMARY KEY ("principal_id","day")
);

-- AddForeignKey
ALTER TABLE "principal_daily_cost" ADD CONSTRAINT "principal_daily_cost_principal_id_fkey" FOREIGN KEY ("principal_id") REFERENCES "principal"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Runs that ended before stop reasons were recorded: the reason their status and failure say.
UPDATE "run" SET "stop_reason" = (CASE
    WHEN "status" = 'SUCCEEDED' AND "concluded_early" THEN 'CONCLUDED'
    WHEN "status" = 'SUCCEEDED' THEN 'ANSWERED'
    WHEN "status" = 'CANCELLED' AND "stop_mode" = 'AFTER_TURN' THEN 'STOPPED_AFTER_TURN'
    WHEN "status" = 'CANCELLED' THEN 'CANCELLED'
    WHEN "status" = 'TIMED_OUT' THEN 'DEADLINE'
    WHEN "failure_reason" IN ('MAX_TURNS', 'TOKEN_BUDGET', 'CONTEXT_OVERFLOW', 'MODEL_ERROR') THEN "failure_reason"
    ELSE 'INTERNAL_ERROR' END)::"RunStopReason"
  WHERE "status" IN ('SUCCEEDED', 'FAILED', 'CANCELLED', 'TIMED_OUT');
