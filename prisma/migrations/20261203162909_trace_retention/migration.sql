-- CreateEnum
CREATE TYPE "RetentionMode" AS ENUM ('DELETE', 'KEEP_SUMMARY');

-- AlterTable
ALTER TABLE "trace" ADD COLUMN     "expired_at" TIMESTAMPTZ(3),
ADD COLUMN     "expired_mode" "RetentionMode",
ADD COLUMN     "purged_at" TIMESTAMPTZ(3),
ADD COLUMN     "unpinned_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "retention_policy" (
    "id" TEXT NOT NULL,
    "principal_id" TEXT NOT NULL,
    "workspace_id" TEXT,
    "days" INTEGER,
    "mode" "RetentionMode" NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "retention_policy_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trace_pin" (
    "trace_id" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trace_pin_pkey" PRIMARY KEY ("trace_id")
);

-- CreateIndex
CREATE INDEX "retention_policy_workspace_id_idx" ON "retention_policy"("workspace_id");

-- CreateIndex
-- NULLS NOT DISTINCT (added by hand; Prisma's schema cannot say it): one default (no workspace) per principal.
CREATE UNIQUE INDEX "retention_policy_principal_id_workspace_id_key" ON "retention_policy"("principal_id", "workspace_id") NULLS NOT DISTINCT;

-- CreateIndex
CREATE INDEX "checkpoint_version_origin_run_id_idx" ON "checkpoint_version"("origin_run_id");

-- AddForeignKey
ALTER TABLE "retention_policy" ADD CONSTRAINT "retention_policy_principal_id_fkey" FOREIGN KEY ("principal_id") REFERENCES "principal"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "trace_pin" ADD CONSTRAINT "trace_pin_trace_id_fkey" FOREIGN KEY ("trace_id") REFERENCES "trace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Partial indexes (added by hand; Prisma's schema cannot say them). The expiry sweep reads the
-- ended traces not yet expired oldest first, up to the earliest moment any policy can make one
-- due; and the expired traces whose rows are still being removed.
CREATE INDEX "trace_expiry_due_idx" ON "trace"("ended_at") WHERE "expired_at" IS NULL AND "ended_at" IS NOT NULL;

CREATE INDEX "trace_purge_pending_idx" ON "trace"("expired_at") WHERE "expired_at" IS NOT NULL AND "purged_at" IS NULL;
