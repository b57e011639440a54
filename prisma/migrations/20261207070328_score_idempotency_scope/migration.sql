-- A score's idempotency key is unique per principal and scope: an access token's keys are its grants' own
-- (domain/principal/idempotency-scope.ts), so another end user's token may use the same key.

-- DropIndex
DROP INDEX "score_owner_id_idempotency_key_key";

-- AlterTable
ALTER TABLE "score" ADD COLUMN     "idempotency_scope" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE UNIQUE INDEX "score_owner_id_idempotency_scope_idempotency_key_key" ON "score"("owner_id", "idempotency_scope", "idempotency_key");
