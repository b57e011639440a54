-- CreateEnum
CREATE TYPE "RunInputStatus" AS ENUM ('PENDING', 'DELIVERED', 'RELEASED');

-- AlterEnum
ALTER TYPE "SpanEventKind" ADD VALUE 'STEERED';

-- CreateTable
CREATE TABLE "run_input" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "idempotency_key" TEXT,
    "status" "RunInputStatus" NOT NULL DEFAULT 'PENDING',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),
    "released_at" TIMESTAMPTZ(3),
    "message_id" TEXT,

    CONSTRAINT "run_input_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "run_input_message_id_key" ON "run_input"("message_id");

-- CreateIndex
CREATE INDEX "run_input_run_id_created_at_id_idx" ON "run_input"("run_id", "created_at", "id");

-- CreateIndex
CREATE UNIQUE INDEX "run_input_run_id_idempotency_key_key" ON "run_input"("run_id", "idempotency_key");

-- AddForeignKey
ALTER TABLE "run_input" ADD CONSTRAINT "run_input_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run_input" ADD CONSTRAINT "run_input_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
