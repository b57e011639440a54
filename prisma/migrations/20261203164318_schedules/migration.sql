-- CreateEnum
CREATE TYPE "ScheduleOverlap" AS ENUM ('SKIP', 'ENQUEUE', 'INTERRUPT');

-- CreateEnum
CREATE TYPE "ScheduleCatchUp" AS ENUM ('NONE', 'LATEST', 'ALL');

-- CreateEnum
CREATE TYPE "ScheduleFireStatus" AS ENUM ('ADMITTED', 'SKIPPED', 'FAILED');

-- AlterEnum
ALTER TYPE "WebhookEventType" ADD VALUE 'SCHEDULE_PAUSED';

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "fire_time" TIMESTAMPTZ(3),
ADD COLUMN     "schedule_id" TEXT;

-- CreateTable
CREATE TABLE "schedule" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "cron" TEXT,
    "interval_seconds" INTEGER,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "question" TEXT NOT NULL,
    "agent" TEXT NOT NULL,
    "limits" JSONB,
    "overlap" "ScheduleOverlap" NOT NULL DEFAULT 'SKIP',
    "catch_up" "ScheduleCatchUp" NOT NULL DEFAULT 'NONE',
    "start_at" TIMESTAMPTZ(3),
    "end_at" TIMESTAMPTZ(3),
    "pause_after_failures" INTEGER,
    "next_fire_at" TIMESTAMPTZ(3),
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "paused_reason" TEXT,
    "resumed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "schedule_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedule_fire" (
    "id" TEXT NOT NULL,
    "schedule_id" TEXT NOT NULL,
    "fire_time" TIMESTAMPTZ(3) NOT NULL,
    "status" "ScheduleFireStatus" NOT NULL,
    "reason" TEXT,
    "run_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schedule_fire_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "schedule_paused_next_fire_at_idx" ON "schedule"("paused", "next_fire_at");

-- CreateIndex
CREATE INDEX "schedule_workspace_id_created_at_id_idx" ON "schedule"("workspace_id", "created_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "schedule_fire_schedule_id_fire_time_key" ON "schedule_fire"("schedule_id", "fire_time");

-- CreateIndex
CREATE INDEX "run_schedule_id_fire_time_idx" ON "run"("schedule_id", "fire_time");

-- AddForeignKey
ALTER TABLE "schedule" ADD CONSTRAINT "schedule_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedule_fire" ADD CONSTRAINT "schedule_fire_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedule"("id") ON DELETE CASCADE ON UPDATE CASCADE;
