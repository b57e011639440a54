-- CreateEnum
CREATE TYPE "MaterialStage" AS ENUM ('DISCOVERED', 'SELECTED', 'READ', 'CONSUMED', 'UNAVAILABLE');

-- CreateEnum
CREATE TYPE "CheckpointOrigin" AS ENUM ('USER', 'MODEL_SUGGESTION');

-- CreateEnum
CREATE TYPE "CheckpointProposalStatus" AS ENUM ('PENDING', 'ACCEPTED', 'STALE', 'INVALID', 'DROPPED');

-- AlterEnum
ALTER TYPE "MessageRole" ADD VALUE 'CONTEXT';

-- AlterEnum
ALTER TYPE "SpanEventKind" ADD VALUE 'CONTEXT';

-- AlterTable
ALTER TABLE "publication_version" ADD COLUMN     "revocation_reason" TEXT,
ADD COLUMN     "revoked_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "run" ADD COLUMN     "checkpoint_revision_seen" INTEGER;

-- AlterTable
ALTER TABLE "workspace" ADD COLUMN     "checkpoint_revision" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "material_use" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "publication_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "publication_version_id" TEXT,
    "stage" "MaterialStage" NOT NULL,
    "reason" TEXT,
    "content_hash" TEXT,
    "request_span_id" TEXT,
    "tool_call_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "material_use_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "checkpoint_version" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "revision" INTEGER NOT NULL,
    "summary" TEXT,
    "next_steps" JSONB NOT NULL,
    "questions" JSONB NOT NULL,
    "origin" "CheckpointOrigin" NOT NULL,
    "author_id" TEXT NOT NULL,
    "origin_run_id" TEXT,
    "accepted_version_ids" JSONB NOT NULL DEFAULT '[]',
    "cited_version_ids" JSONB NOT NULL DEFAULT '[]',
    "source_version_ids" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "checkpoint_version_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "checkpoint_proposal" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "expected_revision" INTEGER NOT NULL,
    "proposal" JSONB NOT NULL,
    "status" "CheckpointProposalStatus" NOT NULL DEFAULT 'PENDING',
    "reason" TEXT,
    "revision" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decided_at" TIMESTAMPTZ(3),

    CONSTRAINT "checkpoint_proposal_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "material_use_publication_version_id_stage_idx" ON "material_use"("publication_version_id", "stage");

-- CreateIndex
CREATE UNIQUE INDEX "material_use_run_id_publication_id_version_stage_key" ON "material_use"("run_id", "publication_id", "version", "stage");

-- CreateIndex
CREATE UNIQUE INDEX "checkpoint_version_workspace_id_revision_key" ON "checkpoint_version"("workspace_id", "revision");

-- CreateIndex
CREATE INDEX "checkpoint_proposal_run_id_created_at_idx" ON "checkpoint_proposal"("run_id", "created_at");

-- AddForeignKey
ALTER TABLE "material_use" ADD CONSTRAINT "material_use_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "material_use" ADD CONSTRAINT "material_use_publication_version_id_fkey" FOREIGN KEY ("publication_version_id") REFERENCES "publication_version"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "checkpoint_version" ADD CONSTRAINT "checkpoint_version_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;
