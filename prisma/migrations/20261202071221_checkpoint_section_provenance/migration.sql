-- AlterTable
ALTER TABLE "checkpoint_version" ADD COLUMN     "sections" JSONB NOT NULL DEFAULT '{}';

-- Revisions written before sections had their own provenance: every section with content
-- inherits the revision's author and sources, so they read exactly as available as before.
-- (Data, not structure: the diff tool cannot write this part.)
UPDATE "checkpoint_version" AS c
SET "sections" = jsonb_build_object(
  'summary', CASE WHEN c."summary" IS NULL THEN NULL ELSE p.provenance END,
  'nextSteps', CASE WHEN jsonb_array_length(c."next_steps") = 0 THEN NULL ELSE p.provenance END,
  'questions', COALESCE(
    (SELECT jsonb_object_agg(q ->> 'id', p.provenance) FROM jsonb_array_elements(c."questions") AS q),
    '{}'::jsonb
  )
)
FROM (
  SELECT "id", jsonb_build_object(
    'author', CASE
      WHEN "origin" = 'MODEL_SUGGESTION' AND "origin_run_id" IS NOT NULL
        THEN jsonb_build_object('kind', 'MODEL_RUN', 'runId', "origin_run_id", 'principalId', "author_id")
      ELSE jsonb_build_object('kind', 'OWNER', 'principalId', "author_id")
    END,
    'sourceVersionIds', "source_version_ids"
  ) AS provenance
  FROM "checkpoint_version"
) AS p
WHERE p."id" = c."id";
