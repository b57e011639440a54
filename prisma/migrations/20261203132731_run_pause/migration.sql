-- AlterEnum
ALTER TYPE "RunStatus" ADD VALUE 'PAUSED';

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "SpanEventKind" ADD VALUE 'PAUSE_REQUESTED';
ALTER TYPE "SpanEventKind" ADD VALUE 'PAUSED';
ALTER TYPE "SpanEventKind" ADD VALUE 'RESUMED';

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "WebhookEventType" ADD VALUE 'RUN_PAUSED';
ALTER TYPE "WebhookEventType" ADD VALUE 'RUN_RESUMED';

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "pause_requested_at" TIMESTAMPTZ(3),
ADD COLUMN     "paused_at" TIMESTAMPTZ(3);
