-- AlterTable
ALTER TABLE "publication_version" ADD COLUMN     "owner_id" TEXT;

-- The history search matches words in one principal's versions, never every tenant's first: a
-- version carries its publication's owner (copied when it is written; a publication never changes
-- owner), and the content index holds the owner beside the words, so one index scan finds the
-- principal's matching versions and touches no other principal's entries. `searchHistory` uses
-- exactly these expressions so that the index serves it.
CREATE FUNCTION "publication_version_owner"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.owner_id := (SELECT p.owner_id FROM publication p WHERE p.id = NEW.publication_id);
  RETURN NEW;
END;
$$;

CREATE TRIGGER "publication_version_owner"
  BEFORE INSERT OR UPDATE OF "publication_id" ON "publication_version"
  FOR EACH ROW EXECUTE FUNCTION "publication_version_owner"();

UPDATE "publication_version" v SET "owner_id" = p."owner_id" FROM "publication" p WHERE p."id" = v."publication_id";

CREATE INDEX "publication_version_owner_content_search_idx" ON "publication_version"
  USING GIN ((ARRAY["owner_id"]), to_tsvector('english'::regconfig, left("content", 100000)));

DROP INDEX "publication_version_content_search_idx";
