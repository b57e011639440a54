-- AlterTable
ALTER TABLE "publication_version" ADD COLUMN     "content_intact" BOOLEAN NOT NULL DEFAULT true;

-- Whether a version's content still matches its hash (W7) is decided where the content is
-- written, not each time eligibility is read: every write of content or content_hash — the
-- version's insert, or any later change to its row — recomputes content_intact, so a catalog page,
-- a search or a material read checks a flag instead of hashing every listed body and its sources.
CREATE FUNCTION "publication_version_content_intact"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.content_intact := encode(sha256(convert_to(NEW.content, 'UTF8')), 'hex') = NEW.content_hash;
  RETURN NEW;
END;
$$;

CREATE TRIGGER "publication_version_content_intact"
  BEFORE INSERT OR UPDATE OF "content", "content_hash" ON "publication_version"
  FOR EACH ROW EXECUTE FUNCTION "publication_version_content_intact"();

UPDATE "publication_version"
   SET "content_intact" = encode(sha256(convert_to("content", 'UTF8')), 'hex') = "content_hash";
