-- The key that minted a key (createApiKey through a key): revoking a key revokes the keys it minted,
-- and theirs. Keys made before are not linked (null).

-- AlterTable
ALTER TABLE "api_key" ADD COLUMN     "created_by_key_id" TEXT;

-- CreateIndex
CREATE INDEX "api_key_created_by_key_id_idx" ON "api_key"("created_by_key_id");

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_created_by_key_id_fkey" FOREIGN KEY ("created_by_key_id") REFERENCES "api_key"("id") ON DELETE SET NULL ON UPDATE CASCADE;
