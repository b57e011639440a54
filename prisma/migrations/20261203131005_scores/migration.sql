-- CreateEnum
CREATE TYPE "ScoreKind" AS ENUM ('NUMERIC', 'CATEGORICAL', 'BOOLEAN');

-- CreateEnum
CREATE TYPE "ScoreSource" AS ENUM ('HUMAN', 'MODEL', 'CODE');

-- CreateEnum
CREATE TYPE "ScoreTargetKind" AS ENUM ('RUN', 'PUBLICATION_VERSION', 'SPAN', 'CHECKPOINT_VERSION');

-- AlterEnum
ALTER TYPE "WebhookEventType" ADD VALUE 'SCORE_CREATED';

-- AlterTable
ALTER TABLE "api_key" ALTER COLUMN "scopes" SET DEFAULT ARRAY['READ', 'SUBSCRIBE', 'ADMIT', 'DECIDE', 'CANCEL', 'SCORE']::TEXT[];

-- CreateTable
CREATE TABLE "score_config" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" "ScoreKind" NOT NULL,
    "min" DOUBLE PRECISION,
    "max" DOUBLE PRECISION,
    "categories" TEXT[],
    "description" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "score_config_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "score" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "config_id" TEXT NOT NULL,
    "target_kind" "ScoreTargetKind" NOT NULL,
    "target_id" TEXT NOT NULL,
    "value" DOUBLE PRECISION,
    "label" TEXT,
    "comment" TEXT,
    "source" "ScoreSource" NOT NULL,
    "created_by_id" TEXT NOT NULL,
    "credential" TEXT,
    "idempotency_key" TEXT,
    "fingerprint" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "score_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "score_config_owner_id_created_at_id_idx" ON "score_config"("owner_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "score_config_owner_id_name_key" ON "score_config"("owner_id", "name");

-- CreateIndex
CREATE INDEX "score_target_kind_target_id_created_at_id_idx" ON "score"("target_kind", "target_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "score_config_id_idx" ON "score"("config_id");

-- CreateIndex
CREATE UNIQUE INDEX "score_owner_id_idempotency_key_key" ON "score"("owner_id", "idempotency_key");

-- AddForeignKey
ALTER TABLE "score_config" ADD CONSTRAINT "score_config_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "score" ADD CONSTRAINT "score_config_id_fkey" FOREIGN KEY ("config_id") REFERENCES "score_config"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Keys that could do everything (or everything but DECIDE, as keys made for agents) may score
-- too; keys limited to fewer operations keep exactly what they were given.
UPDATE "api_key" SET "scopes" = array_append("scopes", 'SCORE')
 WHERE "scopes" @> ARRAY['READ', 'SUBSCRIBE', 'ADMIT', 'CANCEL']::TEXT[] AND NOT ('SCORE' = ANY ("scopes"));
