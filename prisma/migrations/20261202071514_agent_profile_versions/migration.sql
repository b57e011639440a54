-- AlterTable
ALTER TABLE "run" ADD COLUMN     "agent_profile_id" TEXT;

-- CreateTable
CREATE TABLE "agent_profile" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "content_hash" TEXT NOT NULL,
    "system_prompt" TEXT NOT NULL,
    "tools" JSONB,
    "skills" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_profile_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "agent_profile_name_version_key" ON "agent_profile"("name", "version");

-- AddForeignKey
ALTER TABLE "run" ADD CONSTRAINT "run_agent_profile_id_fkey" FOREIGN KEY ("agent_profile_id") REFERENCES "agent_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
