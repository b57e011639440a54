-- Full-text search over the history (W6). Prisma's schema language cannot express an index on an
-- expression, so this migration is written by hand; `searchHistory` uses exactly these
-- expressions so that the indexes serve it. Content is indexed up to its first 100,000
-- characters: a tsvector holds at most 1 MB, which a longer body of short distinct words can
-- exceed, and an index expression that fails would make publishing that version fail.
CREATE INDEX "publication_title_search_idx" ON "publication" USING GIN (to_tsvector('english'::regconfig, "title"));

CREATE INDEX "publication_version_content_search_idx" ON "publication_version" USING GIN (to_tsvector('english'::regconfig, left("content", 100000)));
