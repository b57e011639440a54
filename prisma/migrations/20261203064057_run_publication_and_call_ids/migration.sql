-- CreateEnum
CREATE TYPE "RunPublicationOutcome" AS ENUM ('PUBLISHED', 'NO_WORKSPACE', 'NOT_SUCCEEDED', 'EMPTY_ANSWER', 'NO_VISIBLE_CHARACTERS', 'TOO_LONG');

-- DropIndex
DROP INDEX "tool_approval_run_id_message_id_tool_call_id_key";

-- CreateTable
CREATE TABLE "run_publication" (
    "run_id" TEXT NOT NULL,
    "outcome" "RunPublicationOutcome" NOT NULL,
    "reason" TEXT,
    "publication_version_id" TEXT,
    "decided_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "run_publication_pkey" PRIMARY KEY ("run_id")
);

-- CreateIndex
CREATE INDEX "tool_approval_run_id_message_id_idx" ON "tool_approval"("run_id", "message_id");

-- AddForeignKey
ALTER TABLE "run_publication" ADD CONSTRAINT "run_publication_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;
