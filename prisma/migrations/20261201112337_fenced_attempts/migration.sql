-- CreateEnum
CREATE TYPE "RunAttemptOutcome" AS ENUM ('COMPLETED', 'HANDED_BACK', 'LEASE_LOST', 'CRASHED');

-- AlterEnum
ALTER TYPE "SpanEventKind" ADD VALUE 'INTERRUPTION';

-- AlterEnum
ALTER TYPE "SpanKind" ADD VALUE 'ATTEMPT';

-- AlterEnum
ALTER TYPE "SpanStatus" ADD VALUE 'INTERRUPTED';

-- AlterTable
ALTER TABLE "conversation" ADD COLUMN     "active_run_id" TEXT;

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "run_attempt" (
    "run_id" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "instance" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),
    "outcome" "RunAttemptOutcome",
    "span_id" TEXT,

    CONSTRAINT "run_attempt_pkey" PRIMARY KEY ("run_id","number")
);

-- CreateIndex
CREATE INDEX "message_run_id_seq_idx" ON "message"("run_id", "seq");

-- CreateIndex
CREATE INDEX "run_conversation_id_status_idx" ON "run"("conversation_id", "status");

-- CreateIndex
CREATE INDEX "run_lease_expires_at_idx" ON "run"("lease_expires_at");

-- AddForeignKey
ALTER TABLE "run_attempt" ADD CONSTRAINT "run_attempt_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
