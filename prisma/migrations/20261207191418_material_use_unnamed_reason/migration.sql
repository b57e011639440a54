-- What an access token is told of a ledger entry's reason (graphql/types/material-use.ts): the
-- publication the reason names, and the reason worded without it.
-- AlterTable
ALTER TABLE "material_use" ADD COLUMN     "culprit_publication_id" TEXT,
ADD COLUMN     "unnamed_reason" TEXT;

-- Entries recorded before: a reason that names a version the entry's version rests on (the one
-- wording that names another publication) gets its wording without that version. No culprit was
-- kept, so an access token is told that wording whatever it reaches (graphql/types/material-use.ts).
UPDATE "material_use"
   SET "unnamed_reason" = 'it rests on a version outside this token''s reach, which ' ||
       CASE WHEN "reason" LIKE '%, which no longer matches its content hash' THEN 'no longer matches its content hash' ELSE 'was revoked' END
 WHERE "stage" = 'UNAVAILABLE' AND "reason" LIKE 'it depends on %';
