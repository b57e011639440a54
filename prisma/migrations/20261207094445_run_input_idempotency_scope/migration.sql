-- A steering input's idempotency key is unique per run and scope: an access token's keys are its grants' own
-- (domain/principal/idempotency-scope.ts), so another end user's token on the same run may use the same key.
-- Inputs stored before keep the scope of the principal's API keys, "".

-- DropIndex
DROP INDEX "run_input_run_id_idempotency_key_key";

-- AlterTable
ALTER TABLE "run_input" ADD COLUMN     "idempotency_scope" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE UNIQUE INDEX "run_input_run_id_idempotency_scope_idempotency_key_key" ON "run_input"("run_id", "idempotency_scope", "idempotency_key");
