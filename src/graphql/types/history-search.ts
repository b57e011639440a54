// Full-text search of a workspace's history in the graph (W6): finds the versions the catalog
// would list by words of their title or content, past however many pages the catalog has.
import { createHash } from "node:crypto";
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import {
  type HistorySearch,
  type HistorySearchHit,
  SEARCH_DEFAULT_HITS,
  SEARCH_INDEXED_CHARS,
  SEARCH_MAX_HITS,
  SEARCH_QUERY_MAX,
} from "../../domain/workspace/history-search.js";
import { builder } from "../builder.js";
import { encodeGlobalId, requireIdOfType } from "../global-id.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

/** A hit as one search found it: its snippet depends on the query, so its id does too. */
type HitOfSearch = HistorySearchHit & { searchKey: string };

const HitRef = builder.objectRef<HitOfSearch>("HistorySearchHit").implement({
  description: "A version whose title or content matched: identity, time and a snippet, never the body. Read it with `readMaterial`.",
  fields: (t) => ({
    id: t.id({
      description: "Names this hit of this search (workspace and query): unique across the graph. The version itself is `versionId`.",
      resolve: (hit) => encodeGlobalId("HistorySearchHit", `${hit.searchKey}/${hit.versionId}`),
    }),
    versionId: t.id({
      description: "The PublicationVersion's id (read it with node(id) or readMaterial).",
      resolve: (hit) => encodeGlobalId("PublicationVersion", hit.versionId),
    }),
    publicationId: t.id({ resolve: (hit) => encodeGlobalId("Publication", hit.publicationId) }),
    title: t.exposeString("title"),
    version: t.exposeInt("version"),
    asOf: t.field({ type: "DateTime", description: "When the judgement was formed.", resolve: (hit) => hit.asOf }),
    createdAt: t.field({ type: "DateTime", description: "When it was stored.", resolve: (hit) => hit.createdAt }),
    snippet: t.exposeString("snippet", {
      description:
        "A few words of the content around the matches, which are marked «like this»; the opening words when only the title matched. At most 400 characters, taken from the few thousand characters around the first place a word of the query appears, so in a long body it shows that place rather than the densest one.",
    }),
    matchedTitle: t.exposeBoolean("matchedTitle", { description: "Whether the title matched (else only the content did)." }),
  }),
});

type SearchOf = Omit<HistorySearch, "hits"> & { hits: HitOfSearch[] };

const SearchSuccess = builder.objectRef<SearchOf>("SearchHistorySuccess").implement({
  fields: (t) => ({
    hits: t.field({ type: [HitRef], description: "Title matches first, then the newest versions first.", resolve: (search) => search.hits }),
    complete: t.exposeBoolean("complete", { description: "False when more versions matched than `first`: narrow the query or ask for more." }),
  }),
});

builder.queryField("searchHistory", (t) =>
  t.field({
    type: SearchSuccess,
    description:
      `Finds the versions in a workspace's history catalog whose title or content (its first ${groupedDigits(SEARCH_INDEXED_CHARS)} characters) matches \`query\`: ` +
      `words (matched by their stem), "quoted phrases", -excluded words, \`or\`; at most ${SEARCH_QUERY_MAX} characters. ` +
      `Revoked versions and versions resting on an ineligible one are left out. \`first\`: default ${SEARCH_DEFAULT_HITS}, at most ${SEARCH_MAX_HITS}.`,
    args: {
      workspaceId: t.arg.id({ required: true }),
      query: t.arg.string({ required: true }),
      first: t.arg.int({ defaultValue: SEARCH_DEFAULT_HITS }),
    },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "SearchHistoryPayload" } },
    resolve: async (_root, args, ctx) => {
      const workspaceId = requireIdOfType(String(args.workspaceId), "Workspace", "workspaceId");
      const search = await ctx.services.history.search(ctx.actor, { workspaceId, query: args.query, first: args.first });
      const searchKey = `${workspaceId}/${createHash("sha256").update(args.query).digest("base64url").slice(0, 22)}`;
      return { ...search, hits: search.hits.map((hit) => ({ ...hit, searchKey })) };
    },
  }),
);
