// What GraphiQL shows a newcomer at /graphql: a few tabs of example operations, one per thing
// people come to do (look around, start research, watch a run, read the history, list runs, judge results). A test
// validates every example against the schema, so they cannot drift from it.
import type { Plugin, YogaServerOptions } from "graphql-yoga";
import { DOSSIER_ICON_SVG } from "./favicon.js";
import { renderOfflineGraphiQL } from "./graphiql-page.js";
import { GRAPHIQL_HEADER } from "./trusted-documents.js";

const lookAround = `# Welcome to Dossier. Run an operation with the ▶ button.
# With AUTH_REQUIRED=true, put in Headers (below), in each tab you use:
#   { "authorization": "Bearer <your API key>" }
# (create one with: npm run key:create -- --name "Your name"). Subscriptions send it too.

query Viewer {
  viewer { id name }
}

query Workspaces {
  workspaces(first: 10) {
    edges { node { id title status goal { version statement } checkpointRevision } }
    pageInfo { hasNextPage endCursor }
  }
}
`;

const startResearch = `# Mutations answer with a union: the success type or a typed error.
# Select __typename and narrow with inline fragments.

mutation CreateWorkspace {
  createWorkspace(input: { title: "EU battery supply", goal: "Map EU cell makers' 2027 capacity" }) {
    __typename
    ... on CreateWorkspaceSuccess { workspace { id title goal { version statement } } }
    ... on ValidationError { message issues { field message } }
  }
}

# Paste the workspace id into the variables below, then run this one.
mutation AdmitRun($workspaceId: ID!) {
  admitRun(input: { workspaceId: $workspaceId, question: "Which makers announced 2027 capacity?" }) {
    __typename
    ... on AdmitRunSuccess { replayed run { id status } }
    ... on Error { message }
  }
}
`;

const watchRun = `# A run's trace, live: every change after afterSeq (all of them without it), then new ones.
# Resume after a disconnect by passing the last seq you saw. Or open /traces/<runId> in a browser.

subscription TraceUpdates($runId: ID!, $afterSeq: String) {
  traceUpdates(runId: $runId, afterSeq: $afterSeq) {
    seq
    kind
    at
    span { id parentId kind name status startedAt endedAt usage { input output } }
    event { kind preview }
  }
}

subscription RunEvents($runId: ID!) {
  runEvents(runId: $runId) { status at run { id status answer failureReason } }
}

# The model's text as it is written: the text of the running call so far, then what it adds.
subscription RunOutput($runId: ID!) {
  runOutput(runId: $runId) { seq kind modelCallSpanId text toolCallId }
}
`;

const readHistory = `# What a workspace has learnt: the catalog (no content), one exact version, the checkpoint.

query HistoryCatalog($workspaceId: ID!, $after: String) {
  node(id: $workspaceId) {
    ... on Workspace {
      historyCatalog(first: 20, after: $after) {
        complete
        truncatedReason
        pageInfo { hasNextPage endCursor }
        entries { publicationId title latestVersion versions { version asOf availability { status reason } humanScores { configName value label by } } }
      }
    }
  }
}

query SearchHistory($workspaceId: ID!, $query: String!) {
  searchHistory(workspaceId: $workspaceId, query: $query) {
    __typename
    ... on SearchHistorySuccess { complete hits { publicationId title version asOf snippet } }
    ... on Error { message }
  }
}

query ReadMaterial($publicationId: ID!, $version: Int!) {
  readMaterial(publicationId: $publicationId, version: $version) {
    status
    reason
    publicationVersion { version asOf content }
  }
}

query Checkpoint($workspaceId: ID!) {
  node(id: $workspaceId) {
    ... on Workspace {
      checkpoint {
        __typename
        ... on Checkpoint { revision summary questions { id text status } nextSteps }
        ... on UnavailableCheckpoint { revision reason }
      }
    }
  }
}
`;

const listsAndDashboards = `# Lists and dashboards: find your runs by status, tags, metadata, workspace,
# conversation, agent or time, newest or oldest first, count them, and re-tag them.

query RunList($filter: RunFilter, $orderBy: RunOrder, $after: String) {
  runs(filter: $filter, orderBy: $orderBy, first: 20, after: $after) {
    totalCount
    countCapped
    edges { node { id status question agent tags metadata createdAt } }
    pageInfo { hasNextPage endCursor }
  }
  running: runsCount(filter: { status: [RUNNING, WAITING] })
}

mutation UpdateRunTags($runId: ID!) {
  updateRunTags(input: { runId: $runId, add: ["reviewed"], remove: ["triage"] }) {
    __typename
    ... on UpdateRunTagsSuccess { run { id tags } }
    ... on Error { message }
  }
}
`;

const judge = `# Judge runs and exact versions on scales of your own; people's scores of a version are shown to the next run.

mutation CreateScoreConfig {
  createScoreConfig(input: { name: "accuracy", kind: NUMERIC, min: 1, max: 5 }) {
    __typename
    ... on CreateScoreConfigSuccess { config { id name kind min max } }
    ... on ValidationError { message issues { field message } }
  }
}

# targetId: a Run, PublicationVersion, Span or checkpoint revision id.
mutation CreateScore($targetId: ID!) {
  createScore(input: { targetId: $targetId, configName: "accuracy", value: 4, source: HUMAN, comment: "One date off" }) {
    __typename
    ... on CreateScoreSuccess { score { id configName value createdBy { name } } }
    ... on ValidationError { message issues { field message } }
    ... on Error { message }
  }
}

query RunScores($runId: ID!) {
  run(id: $runId) {
    scoreSummary { configName count mean labelCounts { label count } }
    scores(first: 20) { totalCount edges { node { configName value label source comment createdBy { name } } } }
  }
}
`;

export const graphiqlDefaultTabs: { query: string; variables?: string }[] = [
  { query: lookAround },
  { query: startResearch, variables: JSON.stringify({ workspaceId: "<workspace id>" }, null, 2) },
  { query: watchRun, variables: JSON.stringify({ runId: "<run id>", afterSeq: null }, null, 2) },
  { query: readHistory, variables: JSON.stringify({ workspaceId: "<workspace id>", publicationId: "<publication id>", version: 1 }, null, 2) },
  {
    query: listsAndDashboards,
    variables: JSON.stringify({ filter: { tagsAny: ["triage"], metadata: { team: "supply" } }, orderBy: "CREATED_AT_DESC", runId: "<run id>" }, null, 2),
  },
  { query: judge, variables: JSON.stringify({ targetId: "<run or publication version id>", runId: "<run id>" }, null, 2) },
];

/** The first tab, for GraphiQL versions that take a single default query. */
export const graphiqlDefaultQuery = lookAround;

/**
 * Yoga's GraphiQL settings: the examples, and the page served whole from the installed package.
 * Every request the page sends carries GRAPHIQL_HEADER with `secret`, a value of this process
 * only the served page holds (its WebSocket sends it among the connection parameters' headers,
 * see graphiql-page.ts): with TRUSTED_DOCUMENTS_ONLY=true and GRAPHIQL=true, those may send any
 * document (server/trusted-documents.ts).
 */
export const graphiqlSettings = (secret: string) =>
  ({
    graphiql: {
      title: "Dossier",
      logo: DOSSIER_ICON_SVG,
      subscriptionsProtocol: "WS",
      defaultQuery: graphiqlDefaultQuery,
      defaultTabs: graphiqlDefaultTabs,
      additionalHeaders: { [GRAPHIQL_HEADER]: secret },
    },
    renderGraphiQL: renderOfflineGraphiQL,
  }) satisfies Pick<YogaServerOptions<Record<string, never>, Record<string, never>>, "graphiql" | "renderGraphiQL">;

/**
 * GraphiQL is never framed: another site's page that framed it could have a visitor click ▶ on an
 * operation it put in the address (`?query=`), sent with the API key the visitor's browser keeps in
 * GraphiQL's headers. The page forbids every frame (`frame-ancestors 'none'`, and X-Frame-Options
 * for browsers without CSP); a page that sets its own policy (the trace viewer) keeps it.
 */
export function graphiqlNeverFramed(): Plugin {
  return {
    onResponse({ response }) {
      if (!response.headers.get("content-type")?.startsWith("text/html") || response.headers.has("content-security-policy")) return;
      response.headers.set("content-security-policy", "frame-ancestors 'none'");
      response.headers.set("x-frame-options", "DENY");
    },
  };
}
