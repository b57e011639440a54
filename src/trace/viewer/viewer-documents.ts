// The GraphQL documents the trace viewer's page sends, each as one exact text: the page's script
// embeds them (viewer-data-script.ts, viewer-output-script.ts), and a server that runs only
// trusted documents trusts them (compose/api.ts), so the viewer works with TRUSTED_DOCUMENTS_ONLY.
const SPAN_FIELDS = "id parentId kind name status startedAt endedAt usage { input output cached reasoning } cost { amount } costUnpriced";
const EVENT_FIELDS = "id seq kind at preview size truncated";
// pendingApprovals: the tool calls a WAITING run waits on (human approval); viewerOperations: whether
// the page's key or token may stop, pause or resume the run (CANCEL) or decide its calls (DECIDE);
// stopRequest: a stop asked for (cancelRun's mode), pending or taken.
const RUN_FIELDS =
  "id status pauseRequestedAt question answer answerComplete concludedEarly stopRequest { mode requestedAt } failureReason model viewerOperations attempts { edges { node { number outcome endedAt span { id } } } } " +
  "pendingApprovals { edges { node { id toolCallId toolName mcpTool arguments readableArguments { warnings } expiresAt } } }";
export const RUN_QUERY = `query TraceViewerRun($id: ID!) { node(id: $id) { __typename ... on Run { ${RUN_FIELDS} } } }`;
const PAGE_INFO = "pageInfo { hasNextPage endCursor }";
const EVENTS_PAGE = (args: string) => `events(${args}) { edges { node { ${EVENT_FIELDS} } } ${PAGE_INFO} }`;
const SPANS_PAGE = `spans(first: $first, after: $after) { edges { node { ${SPAN_FIELDS} ${EVENTS_PAGE("first: $first")} } } ${PAGE_INFO} }`;
export const TRACE_QUERY =
  "query TraceViewerTrace($id: ID!, $first: Int!, $after: String) { node(id: $id) { __typename ... on Run { " +
  RUN_FIELDS +
  // An expired trace (TraceExpiredError) shows the skeleton its policy kept (KEEP_SUMMARY), if any.
  " trace { __typename ... on Trace { id lastSeq endedAt " +
  SPANS_PAGE +
  " } ... on TraceExpiredError { expiredAt mode summary { id lastSeq endedAt " +
  SPANS_PAGE +
  " } } } } } }";
export const MORE_SPANS = `query TraceViewerSpans($id: ID!, $first: Int!, $after: String) { node(id: $id) { ... on Trace { ${SPANS_PAGE} } } }`;
export const MORE_EVENTS = `query TraceViewerEvents($id: ID!, $first: Int!, $after: String) { node(id: $id) { ... on Span { ${EVENTS_PAGE("first: $first, after: $after")} } } }`;
export const UPDATES =
  "subscription TraceViewerUpdates($runId: ID!, $afterSeq: String) { traceUpdates(runId: $runId, afterSeq: $afterSeq) { " +
  "seq kind at span { " +
  SPAN_FIELDS +
  " } event { " +
  EVENT_FIELDS +
  " } } }";
// Read only when asked for: a span's attributes (when it is selected, or the root's failure), a
// model call's whole request, an event's whole payload.
export const SPAN_ATTRIBUTES = "query TraceViewerSpan($id: ID!) { node(id: $id) { ... on Span { attributes } } }";
export const SPAN_REQUEST = "query TraceViewerRequest($id: ID!) { node(id: $id) { ... on Span { request } } }";
export const EVENT_PAYLOAD = "query TraceViewerPayload($id: ID!) { node(id: $id) { ... on SpanEvent { payload } } }";

// The running model call's text as it grows (viewer-output-script.ts).
export const OUTPUT = "subscription TraceViewerOutput($runId: ID!) { runOutput(runId: $runId) { seq modelCallSpanId kind text } }";

// The page's buttons: Stop (in a mode), Pause or Resume, and Approve or Reject (with an optional reason) of a waiting call.
export const CANCEL_RUN =
  "mutation TraceViewerCancel($runId: ID!, $mode: CancelMode) { cancelRun(input: { runId: $runId, mode: $mode }) { __typename ... on Error { message } } }";
export const PAUSE_RUN = "mutation TraceViewerPause($runId: ID!) { pauseRun(input: { runId: $runId }) { __typename ... on Error { message } } }";
export const RESUME_RUN = "mutation TraceViewerResume($runId: ID!) { resumeRun(input: { runId: $runId }) { __typename ... on Error { message } } }";
export const DECIDE = "mutation TraceViewerDecide($input: DecideToolCallInput!) { decideToolCall(input: $input) { __typename ... on Error { message } } }";

/** Every document of the page, by a documentId of Dossier's own. */
export const VIEWER_DOCUMENTS: Record<string, string> = Object.fromEntries(
  Object.entries({
    RUN_QUERY,
    TRACE_QUERY,
    MORE_SPANS,
    MORE_EVENTS,
    UPDATES,
    SPAN_ATTRIBUTES,
    SPAN_REQUEST,
    EVENT_PAYLOAD,
    OUTPUT,
    CANCEL_RUN,
    PAUSE_RUN,
    RESUME_RUN,
    DECIDE,
  }).map(([name, text]) => [`x-dossier-trace-viewer:${name}`, text]),
);
