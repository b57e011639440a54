-- CreateEnum
CREATE TYPE "SpanKind" AS ENUM ('RUN', 'TURN', 'MODEL_CALL', 'TOOL_CALL', 'COMPACTION', 'SPILL', 'SKILL_LOAD', 'MCP_CALL');

-- CreateEnum
CREATE TYPE "SpanStatus" AS ENUM ('RUNNING', 'OK', 'ERROR', 'CANCELLED');

-- CreateEnum
CREATE TYPE "SpanEventKind" AS ENUM ('THINKING', 'TOOL_INPUT', 'TOOL_OUTPUT', 'FINAL_REPLY', 'ERROR', 'COMPACTION', 'SPILL', 'REPAIR', 'BUDGET');

-- CreateEnum
CREATE TYPE "TraceChangeType" AS ENUM ('SPAN_STARTED', 'SPAN_UPDATED', 'SPAN_ENDED', 'EVENT_APPENDED', 'TRACE_ENDED');

-- AlterTable
ALTER TABLE "message" ADD COLUMN     "tool_call_id" TEXT,
ADD COLUMN     "tool_calls" JSONB,
ADD COLUMN     "tool_name" TEXT;

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "lease_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "lease_owner" TEXT,
ADD COLUMN     "model_label" TEXT,
ADD COLUMN     "tokens_used" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "trace" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "last_seq" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "trace_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "span" (
    "id" TEXT NOT NULL,
    "trace_id" TEXT NOT NULL,
    "parent_id" TEXT,
    "kind" "SpanKind" NOT NULL,
    "name" TEXT NOT NULL,
    "status" "SpanStatus" NOT NULL DEFAULT 'RUNNING',
    "attributes" JSONB NOT NULL DEFAULT '{}',
    "usage" JSONB,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "span_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "span_event" (
    "id" TEXT NOT NULL,
    "span_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" "SpanEventKind" NOT NULL,
    "payload" TEXT NOT NULL,
    "payload_size" INTEGER NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "span_event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trace_change" (
    "trace_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "type" "TraceChangeType" NOT NULL,
    "span_id" TEXT,
    "event_id" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "trace_change_pkey" PRIMARY KEY ("trace_id","seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "trace_run_id_key" ON "trace"("run_id");

-- CreateIndex
CREATE INDEX "span_trace_id_started_at_idx" ON "span"("trace_id", "started_at");

-- CreateIndex
CREATE INDEX "span_event_span_id_seq_idx" ON "span_event"("span_id", "seq");

-- AddForeignKey
ALTER TABLE "trace" ADD CONSTRAINT "trace_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "span" ADD CONSTRAINT "span_trace_id_fkey" FOREIGN KEY ("trace_id") REFERENCES "trace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "span" ADD CONSTRAINT "span_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "span"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "span_event" ADD CONSTRAINT "span_event_span_id_fkey" FOREIGN KEY ("span_id") REFERENCES "span"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "trace_change" ADD CONSTRAINT "trace_change_trace_id_fkey" FOREIGN KEY ("trace_id") REFERENCES "trace"("id") ON DELETE CASCADE ON UPDATE CASCADE;
