-- AlterTable
ALTER TABLE "run" ADD COLUMN     "cost" DECIMAL(20,10) NOT NULL DEFAULT 0,
ADD COLUMN     "cost_unpriced" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "span" ADD COLUMN     "cost" DECIMAL(20,10),
ADD COLUMN     "cost_unpriced" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "model_price" (
    "id" TEXT NOT NULL,
    "principal_id" TEXT,
    "model" TEXT NOT NULL,
    "effective_from" TIMESTAMPTZ(3) NOT NULL,
    "input_per_million" DECIMAL(20,10) NOT NULL,
    "cached_input_per_million" DECIMAL(20,10),
    "cache_write_per_million" DECIMAL(20,10),
    "output_per_million" DECIMAL(20,10) NOT NULL,
    "reasoning_per_million" DECIMAL(20,10),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "model_price_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
-- NULLS NOT DISTINCT (added by hand; Prisma's schema cannot say it): the operator's entries (no
-- principal) are also at most one per model and effective time.
CREATE UNIQUE INDEX "model_price_principal_id_model_effective_from_key" ON "model_price"("principal_id", "model", "effective_from") NULLS NOT DISTINCT;

-- CreateIndex
CREATE INDEX "run_owner_id_cost_id_idx" ON "run"("owner_id", "cost" DESC, "id" DESC);

-- AddForeignKey
ALTER TABLE "model_price" ADD CONSTRAINT "model_price_principal_id_fkey" FOREIGN KEY ("principal_id") REFERENCES "principal"("id") ON DELETE CASCADE ON UPDATE CASCADE;
