-- CreateEnum
CREATE TYPE "WebhookEventType" AS ENUM ('RUN_SUCCEEDED', 'RUN_FAILED', 'RUN_CANCELLED', 'RUN_TIMED_OUT', 'RUN_WAITING', 'CHECKPOINT_UPDATED', 'PUBLICATION_VERSION_CREATED', 'WORKSPACE_ARCHIVED', 'WORKSPACE_DELETED');

-- CreateEnum
CREATE TYPE "WebhookMessageStatus" AS ENUM ('PENDING', 'SUCCEEDED', 'FAILED');

-- CreateTable
CREATE TABLE "webhook" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT,
    "events" "WebhookEventType"[],
    "secret" TEXT NOT NULL,
    "previous_secret" TEXT,
    "previous_secret_expires_at" TIMESTAMPTZ(3),
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "disabled_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_message" (
    "id" TEXT NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "type" "WebhookEventType" NOT NULL,
    "body" TEXT NOT NULL,
    "status" "WebhookMessageStatus" NOT NULL DEFAULT 'PENDING',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) DEFAULT CURRENT_TIMESTAMP,
    "relayed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_attempt" (
    "id" TEXT NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "status_code" INTEGER,
    "duration_ms" INTEGER NOT NULL,
    "error" TEXT,
    "next_retry_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_attempt_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "webhook_owner_id_created_at_id_idx" ON "webhook"("owner_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_message_status_next_attempt_at_idx" ON "webhook_message"("status", "next_attempt_at");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_message_webhook_id_event_id_key" ON "webhook_message"("webhook_id", "event_id");

-- CreateIndex
CREATE INDEX "webhook_attempt_webhook_id_created_at_id_idx" ON "webhook_attempt"("webhook_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_attempt_message_id_idx" ON "webhook_attempt"("message_id");

-- AddForeignKey
ALTER TABLE "webhook" ADD CONSTRAINT "webhook_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_message" ADD CONSTRAINT "webhook_message_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhook"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempt" ADD CONSTRAINT "webhook_attempt_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhook"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempt" ADD CONSTRAINT "webhook_attempt_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "webhook_message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
