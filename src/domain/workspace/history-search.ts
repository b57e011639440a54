// Searching a workspace's history (W6): PostgreSQL full-text search over the titles and the
// content of the versions the history catalog would list (history-scope.ts), for one principal.
// It answers with identities, versions, as-of times and a short snippet around the words found —
// never a body — so a client or a model can find a material past the catalog's first pages and
// then read the exact version it chose.
import { z } from "zod";
import { Prisma, type PrismaClient } from "../../generated/prisma/client.js";
import { ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { eligibilityOf } from "../research/eligibility.js";
import { describeUnstorable, unstorableProblem } from "../text/unstorable-text.js";
import { nonBlank, parseInput } from "../validation.js";
import { inWorkspaceHistory } from "./history-scope.js";
import { findVisibleWorkspace } from "./workspace-access.js";

export const SEARCH_QUERY_MAX = 200;
export const SEARCH_DEFAULT_HITS = 20;
export const SEARCH_MAX_HITS = 50;
/**
 * How much of a version's content is searched: the words of this many characters are kept in
 * content_words when the content is written (the history_search_words migration), as a tsvector
 * holds at most 1 MB, which a longer body of short distinct words can exceed.
 */
export const SEARCH_INDEXED_CHARS = 100_000;
/** The longest snippet, in characters, however long the words around a match are. */
export const SNIPPET_MAX_CHARS = 400;
/**
 * The content a snippet is taken from: this many characters starting SNIPPET_WINDOW_BEFORE before
 * the first place a word of the query appears (or the content's opening when only the title
 * matched), so highlighting costs the same whatever the length of the version.
 */
export const SNIPPET_WINDOW_CHARS = 3_000;
export const SNIPPET_WINDOW_BEFORE = 500;

export type HistorySearchHit = {
  versionId: string;
  publicationId: string;
  title: string;
  version: number;
  asOf: Date;
  createdAt: Date;
  /** Words around the matches in the content (matches marked «like this»), or its opening words when only the title matched. */
  snippet: string;
  matchedTitle: boolean;
};

export type HistorySearch = {
  hits: HistorySearchHit[];
  /** False when more versions match than `first`: narrow the query or ask for more. */
  complete: boolean;
};

const searchInput = z.object({
  query: nonBlank(SEARCH_QUERY_MAX).superRefine((query, ctx) => {
    const problem = unstorableProblem(query);
    if (problem) ctx.addIssue({ code: "custom", message: describeUnstorable(problem) });
  }),
  first: z
    .number()
    .int()
    .min(1, "asks for no hits")
    .max(SEARCH_MAX_HITS, `must be at most ${SEARCH_MAX_HITS}`)
    .nullish()
    .transform((first) => first ?? SEARCH_DEFAULT_HITS),
});

export type SearchHistoryInput = { workspaceId: string; query: string; first?: number | null };

type Row = {
  id: string;
  publication_id: string;
  title: string;
  version: number;
  as_of: Date;
  created_at: Date;
  snippet: string;
  matched_title: boolean;
};

/**
 * The versions in the workspace's history whose title or content matches `query` (web-search
 * syntax: words, "quoted phrases", -excluded, or), those whose title matches first, then newest
 * first. Revoked versions, and versions resting on one that is no longer eligible, are left out.
 */
export async function searchHistory(prisma: PrismaClient, actor: Actor, input: SearchHistoryInput): Promise<HistorySearch> {
  const { query, first } = parseInput(searchInput, { query: input.query, first: input.first });
  await findVisibleWorkspace(prisma, actor, input.workspaceId);
  const title = Prisma.sql`to_tsvector('english'::regconfig, p.title)`;
  const content = Prisma.sql`v.content_words`;
  // The query itself (not q's column) in the matches, so the index scans take it as a condition.
  const words = Prisma.sql`websearch_to_tsquery('english'::regconfig, ${query})`;
  // A snippet is highlighted in a window of the content around the first place a word of the
  // query appears (its stem found at a word's start, else anywhere), not in the whole indexed
  // content: highlighting parses every word it is given, which for a long body costs far more
  // than the match itself.
  const lowered = Prisma.sql`lowered.text`;
  const stem = Prisma.sql`left(lexeme, greatest(length(lexeme) - 1, 3))`;
  const firstMatch = Prisma.sql`(SELECT coalesce(min(coalesce(nullif(strpos(${lowered}, ' ' || ${stem}), 0), nullif(strpos(${lowered}, ${stem}) - 1, -1))), 0)
                                   FROM unnest(q.lexemes) lexeme)`;
  const before = Prisma.raw(String(SNIPPET_WINDOW_BEFORE));
  const snippetWindow = Prisma.sql`CASE WHEN found.at <= ${before} + 1 THEN left(v.content, ${Prisma.raw(String(SNIPPET_WINDOW_CHARS))})
    ELSE regexp_replace(substr(v.content, found.at - ${before}, ${Prisma.raw(String(SNIPPET_WINDOW_CHARS))}), '^\\S*\\s+', '') END`;
  // The matches come from the GIN indexes on the title's expression (the history_search
  // migration) and on the stored content_words (history_search_words) — the principal's own
  // versions only: the content index holds each version's owner beside its words —, then are
  // narrowed to the workspace's history, ordered and limited; only the page's rows get a snippet,
  // so a search that matches thousands of versions highlights at most `first + 1` of them.
  const rows = await prisma.$queryRaw<Row[]>`
    WITH q AS (SELECT query, ${lexemesOf(Prisma.sql`query`)} AS lexemes
                 FROM (SELECT websearch_to_tsquery('english'::regconfig, ${query}) AS query) parsed),
    matched AS (
      SELECT v.id FROM publication_version v WHERE ${ownedBy(actor.principalId)} AND ${content} @@ ${words}
      UNION
      SELECT v.id FROM publication p JOIN publication_version v ON v.publication_id = p.id
       WHERE p.owner_id = ${actor.principalId} AND ${title} @@ ${words}),
    page AS (
      SELECT v.id, (${title} @@ q.query) AS matched_title
        FROM q, matched m JOIN publication_version v ON v.id = m.id JOIN publication p ON p.id = v.publication_id
       WHERE ${inWorkspaceHistory(input.workspaceId, actor.principalId)}
         AND v.revoked_at IS NULL
       ORDER BY matched_title DESC, v.created_at DESC, v.id DESC
       LIMIT ${first + 1})
    SELECT v.id, v.publication_id, p.title, v.version, v.as_of, v.created_at, page.matched_title,
           left(ts_headline('english'::regconfig, ${snippetWindow}, q.query,
                            'MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … ", StartSel=«, StopSel=»'),
                ${SNIPPET_MAX_CHARS}) AS snippet
      FROM q CROSS JOIN page JOIN publication_version v ON v.id = page.id JOIN publication p ON p.id = v.publication_id
           CROSS JOIN LATERAL (SELECT ' ' || lower(left(v.content, ${Prisma.raw(String(SEARCH_INDEXED_CHARS))})) AS text) lowered
           CROSS JOIN LATERAL (SELECT ${firstMatch} AS at) found
     ORDER BY page.matched_title DESC, v.created_at DESC, v.id DESC`;
  if (rows.length === 0 && (await hasNoWords(prisma, query))) {
    throw new ValidationError([{ field: "query", message: "has no words to search for (only stop words or punctuation)" }]);
  }
  const listed = rows.slice(0, first);
  const eligibility = await eligibilityOf(
    prisma,
    listed.map((row) => row.id),
  );
  const hits = listed
    .filter((row) => eligibility.get(row.id)?.eligible !== false)
    .map((row) => ({
      versionId: row.id,
      publicationId: row.publication_id,
      title: row.title,
      version: Number(row.version),
      asOf: new Date(row.as_of),
      createdAt: new Date(row.created_at),
      snippet: row.snippet,
      matchedTitle: row.matched_title,
    }));
  return { hits, complete: rows.length <= first };
}

/** The condition on `publication_version v` that the content index answers with its owner column. */
const ownedBy = (principalId: string) => Prisma.sql`ARRAY[v.owner_id] @> ARRAY[${principalId}::text]`;

/** The words of a parsed query that a match needs (not those it excludes), as letters and digits only. */
const lexemesOf = (query: Prisma.Sql) =>
  Prisma.sql`ARRAY(SELECT m[1] FROM regexp_matches(querytree(${query}), '''([^'']+)''', 'g') m WHERE m[1] ~ '^[[:alnum:]]+$')`;

async function hasNoWords(prisma: PrismaClient, query: string): Promise<boolean> {
  const [row] = await prisma.$queryRaw<{ nodes: number }[]>`SELECT numnode(websearch_to_tsquery('english'::regconfig, ${query})) AS nodes`;
  return Number(row?.nodes ?? 0) === 0;
}
