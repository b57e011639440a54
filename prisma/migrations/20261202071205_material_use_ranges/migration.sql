-- CreateEnum
CREATE TYPE "MaterialCoverage" AS ENUM ('WHOLE', 'PART');

-- DropIndex
DROP INDEX "material_use_run_id_publication_id_version_stage_key";

-- AlterTable
ALTER TABLE "material_use" ADD COLUMN     "coverage" "MaterialCoverage",
ADD COLUMN     "range_end" INTEGER,
ADD COLUMN     "range_start" INTEGER;

-- CreateIndex
-- NULLS NOT DISTINCT (added by hand; Prisma's schema cannot say it): the stages without a range
-- (DISCOVERED, SELECTED, UNAVAILABLE) stay at most one entry per material and run, and READ and
-- CONSUMED one per range. Entries written before this migration keep a null range: it means the
-- range was not recorded (their content_hash is the whole version's), not that the whole was read.
CREATE UNIQUE INDEX "material_use_run_id_publication_id_version_stage_range_star_key" ON "material_use"("run_id", "publication_id", "version", "stage", "range_start", "range_end") NULLS NOT DISTINCT;
