-- CreateEnum
CREATE TYPE "LinkTargetKind" AS ENUM ('CONVERSATION', 'RUN', 'PUBLICATION', 'ARTIFACT');

-- CreateEnum
CREATE TYPE "LinkRefusalReason" AS ENUM ('WORKSPACE_ARCHIVED', 'WORKSPACE_DELETED');

-- CreateEnum
CREATE TYPE "MessageRole" AS ENUM ('USER', 'ASSISTANT', 'TOOL', 'SUMMARY', 'REPAIR');

-- CreateEnum
CREATE TYPE "RunStatus" AS ENUM ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'TIMED_OUT');

-- CreateEnum
CREATE TYPE "ArtifactRetention" AS ENUM ('TEMPORARY', 'RETAINED');

-- DropIndex
DROP INDEX "workspace_created_at_id_idx";

-- AlterTable
ALTER TABLE "workspace" ADD COLUMN     "deleted_at" TIMESTAMPTZ(3),
ADD COLUMN     "owner_id" TEXT NOT NULL DEFAULT 'development';

-- CreateTable
CREATE TABLE "principal" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "principal_pkey" PRIMARY KEY ("id")
);

-- Workspaces created before principals existed belong to the development principal.
INSERT INTO "principal" ("id", "name")
SELECT 'development', 'Development principal' WHERE EXISTS (SELECT 1 FROM "workspace");
ALTER TABLE "workspace" ALTER COLUMN "owner_id" DROP DEFAULT;

-- CreateTable
CREATE TABLE "api_key" (
    "id" TEXT NOT NULL,
    "principal_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workspace_link" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "target_kind" "LinkTargetKind" NOT NULL,
    "target_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workspace_link_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "link_refusal" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "target_kind" "LinkTargetKind" NOT NULL,
    "target_id" TEXT NOT NULL,
    "run_id" TEXT,
    "reason" "LinkRefusalReason" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "link_refusal_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "conversation" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "message_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "conversation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" "MessageRole" NOT NULL,
    "content" TEXT NOT NULL,
    "run_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "workspace_id" TEXT,
    "agent" TEXT NOT NULL,
    "question" TEXT NOT NULL,
    "status" "RunStatus" NOT NULL DEFAULT 'QUEUED',
    "max_turns" INTEGER NOT NULL,
    "token_budget" INTEGER NOT NULL,
    "deadline_seconds" INTEGER NOT NULL,
    "deadline_at" TIMESTAMPTZ(3) NOT NULL,
    "goal_version_id" TEXT,
    "goal_version_no" INTEGER,
    "goal_statement" TEXT,
    "configuration" JSONB NOT NULL,
    "answer" TEXT,
    "failure_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run_material" (
    "run_id" TEXT NOT NULL,
    "publication_version_id" TEXT NOT NULL,
    "position" INTEGER NOT NULL,

    CONSTRAINT "run_material_pkey" PRIMARY KEY ("run_id","publication_version_id")
);

-- CreateTable
CREATE TABLE "publication" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "latest_version" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "publication_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "publication_version" (
    "id" TEXT NOT NULL,
    "publication_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "content" TEXT NOT NULL,
    "content_hash" TEXT NOT NULL,
    "as_of" TIMESTAMPTZ(3) NOT NULL,
    "origin_run_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "publication_version_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "publication_source" (
    "version_id" TEXT NOT NULL,
    "source_version_id" TEXT NOT NULL,
    "position" INTEGER NOT NULL,

    CONSTRAINT "publication_source_pkey" PRIMARY KEY ("version_id","source_version_id")
);

-- CreateTable
CREATE TABLE "artifact" (
    "id" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "mime_type" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "content" TEXT NOT NULL,
    "retention" "ArtifactRetention" NOT NULL DEFAULT 'TEMPORARY',
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "artifact_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_key" (
    "principal_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_key_pkey" PRIMARY KEY ("principal_id","key")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_key_hash_key" ON "api_key"("hash");

-- CreateIndex
CREATE INDEX "api_key_principal_id_idx" ON "api_key"("principal_id");

-- CreateIndex
CREATE INDEX "workspace_link_workspace_id_created_at_id_idx" ON "workspace_link"("workspace_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "workspace_link_workspace_id_target_kind_target_id_key" ON "workspace_link"("workspace_id", "target_kind", "target_id");

-- CreateIndex
CREATE INDEX "link_refusal_workspace_id_idx" ON "link_refusal"("workspace_id");

-- CreateIndex
CREATE INDEX "conversation_owner_id_created_at_id_idx" ON "conversation"("owner_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "message_conversation_id_seq_key" ON "message"("conversation_id", "seq");

-- CreateIndex
CREATE INDEX "run_owner_id_created_at_id_idx" ON "run"("owner_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "run_status_created_at_idx" ON "run"("status", "created_at");

-- CreateIndex
CREATE INDEX "publication_owner_id_created_at_id_idx" ON "publication"("owner_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "publication_version_publication_id_version_key" ON "publication_version"("publication_id", "version");

-- CreateIndex
CREATE INDEX "artifact_owner_id_created_at_id_idx" ON "artifact"("owner_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "idempotency_key_expires_at_idx" ON "idempotency_key"("expires_at");

-- CreateIndex
CREATE INDEX "workspace_owner_id_created_at_id_idx" ON "workspace"("owner_id", "created_at" DESC, "id" DESC);

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_principal_id_fkey" FOREIGN KEY ("principal_id") REFERENCES "principal"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace" ADD CONSTRAINT "workspace_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_link" ADD CONSTRAINT "workspace_link_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "link_refusal" ADD CONSTRAINT "link_refusal_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "conversation" ADD CONSTRAINT "conversation_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversation"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversation"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_goal_version_id_fkey" FOREIGN KEY ("goal_version_id") REFERENCES "goal_version"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run_material" ADD CONSTRAINT "run_material_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run_material" ADD CONSTRAINT "run_material_publication_version_id_fkey" FOREIGN KEY ("publication_version_id") REFERENCES "publication_version"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "publication" ADD CONSTRAINT "publication_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "publication_version" ADD CONSTRAINT "publication_version_publication_id_fkey" FOREIGN KEY ("publication_id") REFERENCES "publication"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "publication_version" ADD CONSTRAINT "publication_version_origin_run_id_fkey" FOREIGN KEY ("origin_run_id") REFERENCES "run"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "publication_source" ADD CONSTRAINT "publication_source_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "publication_version"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "publication_source" ADD CONSTRAINT "publication_source_source_version_id_fkey" FOREIGN KEY ("source_version_id") REFERENCES "publication_version"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "artifact" ADD CONSTRAINT "artifact_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "principal"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
