-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "WorkspaceStatus" AS ENUM ('ACTIVE', 'ARCHIVED');

-- CreateTable
CREATE TABLE "workspace" (
    "id" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "status" "WorkspaceStatus" NOT NULL DEFAULT 'ACTIVE',
    "goal_version" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "archived_at" TIMESTAMPTZ(3),

    CONSTRAINT "workspace_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "goal_version" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "statement" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "goal_version_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "workspace_created_at_id_idx" ON "workspace"("created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "goal_version_workspace_id_version_key" ON "goal_version"("workspace_id", "version");

-- AddForeignKey
ALTER TABLE "goal_version" ADD CONSTRAINT "goal_version_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspace"("id") ON DELETE CASCADE ON UPDATE CASCADE;
