-- CreateEnum
CREATE TYPE "CancelMode" AS ENUM ('NOW', 'AFTER_TURN', 'CONCLUDE');

-- AlterEnum
ALTER TYPE "SpanEventKind" ADD VALUE 'STOP_REQUESTED';

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "answer_partial" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "concluded_early" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "stop_mode" "CancelMode",
ADD COLUMN     "stop_requested_at" TIMESTAMPTZ(3),
ADD COLUMN     "stop_requested_by" TEXT;
