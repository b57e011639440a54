-- AlterTable
ALTER TABLE "publication_version" ADD COLUMN     "content_words" tsvector;

-- The history search matched and highlighted by parsing each candidate version's body at query
-- time whenever the planner walked the table (small tables, the embedded database) or re-checked
-- a phrase: seconds for a few dozen long versions. The words are now parsed once, when the
-- content is written, and kept in content_words; the index holds the owner beside them.
-- `searchHistory` matches `content_words` so that the index serves it.
CREATE FUNCTION "publication_version_content_words"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.content_words := to_tsvector('english'::regconfig, left(NEW.content, 100000));
  RETURN NEW;
END;
$$;

CREATE TRIGGER "publication_version_content_words"
  BEFORE INSERT OR UPDATE OF "content" ON "publication_version"
  FOR EACH ROW EXECUTE FUNCTION "publication_version_content_words"();

UPDATE "publication_version" SET "content_words" = to_tsvector('english'::regconfig, left("content", 100000));

CREATE INDEX "publication_version_owner_content_words_idx" ON "publication_version"
  USING GIN ((ARRAY["owner_id"]), "content_words");

DROP INDEX "publication_version_owner_content_search_idx";
