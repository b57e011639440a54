-- CreateTable
CREATE TABLE "spill" (
    "id" TEXT NOT NULL,
    "handle" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "tool_call_id" TEXT NOT NULL,
    "tool_name" TEXT NOT NULL,
    "size_bytes" INTEGER NOT NULL,
    "size_chars" INTEGER NOT NULL,
    "preview" TEXT NOT NULL,
    "strategy" TEXT NOT NULL,
    "preview_items" INTEGER,
    "list_path" TEXT,
    "item_count" INTEGER,
    "item_starts" INTEGER[],
    "list_end" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "released_at" TIMESTAMPTZ(3),

    CONSTRAINT "spill_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "spill_handle_key" ON "spill"("handle");

-- CreateIndex
CREATE UNIQUE INDEX "spill_message_id_key" ON "spill"("message_id");

-- CreateIndex
CREATE INDEX "spill_run_id_released_at_idx" ON "spill"("run_id", "released_at");

-- AddForeignKey
ALTER TABLE "spill" ADD CONSTRAINT "spill_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "spill" ADD CONSTRAINT "spill_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
