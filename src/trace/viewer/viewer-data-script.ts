// The trace viewer's browser script, first part: the viewer's key, the API's queries, and the
// page's state, read as a snapshot and then kept by applying each update; what can be large (a
// span's attributes, a model call's request, an event's payload) is read only when asked for. Plain browser
// JavaScript, no framework and no bundler; the parts share one script scope (viewer-page.ts joins
// them in order). Everything from the API is put in the page with textContent, never as HTML.
import { EVENT_PAYLOAD, MORE_EVENTS, MORE_SPANS, RUN_QUERY, SPAN_ATTRIBUTES, SPAN_REQUEST, TRACE_QUERY, UPDATES } from "./viewer-documents.js";

export const DATA_SCRIPT = String.raw`
"use strict";
const runPath = location.pathname.replace(/^\/traces\//, "").replace(/\/$/, "");
/** The run the address names; null when its path is no valid percent-encoding, which no run's id is. */
const runId = (() => {
  try {
    return decodeURIComponent(runPath);
  } catch {
    return null;
  }
})();
const endpoint = "/graphql";
const wsEndpoint = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + endpoint;
const TERMINAL = ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"];

// The credential: an API key (#key=…) or an access token (#token=…) from the fragment, read at
// start and again when the fragment changes (see the hashchange handler for which changes are
// taken), or typed into the form. Kept in this page's memory only, taken out of the address bar,
// and sent only in the Authorization header and graphql-ws connection_init — never in a URL.
/** The key or token the fragment holds ("" when none), taken out of the address bar. */
function takeHashCredential() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token") || fragment.get("key");
  if (!given) return "";
  history.replaceState(null, "", location.pathname + location.search);
  return given.trim();
}
let credential = takeHashCredential();
// Earlier versions of the page kept the key in localStorage: it is forgotten there.
try {
  localStorage.removeItem("dossier.apiKey");
} catch {
  // Storage refused (a framed page's partitioned or blocked storage): nothing was kept there.
}
const authHeaders = () => (credential ? { authorization: "Bearer " + credential } : {});
/** Bumped whenever the page starts over (another credential): work begun before it is dropped. */
let generation = 0;
const stale = () => Object.assign(new Error("superseded"), { final: true, stale: true });

// Spans and events come a page at a time (PAGE, the server's default page): the snapshot reads
// every page of each connection, asking for the next one after its endCursor until none is left.
const PAGE = 100;
// The API's documents (viewer-documents.ts), each an exact text a trusted-documents server trusts.
const RUN_QUERY = ${JSON.stringify(RUN_QUERY)};
const TRACE_QUERY = ${JSON.stringify(TRACE_QUERY)};
const MORE_SPANS = ${JSON.stringify(MORE_SPANS)};
const MORE_EVENTS = ${JSON.stringify(MORE_EVENTS)};
const UPDATES = ${JSON.stringify(UPDATES)};
const SPAN_ATTRIBUTES = ${JSON.stringify(SPAN_ATTRIBUTES)};
const SPAN_REQUEST = ${JSON.stringify(SPAN_REQUEST)};
const EVENT_PAYLOAD = ${JSON.stringify(EVENT_PAYLOAD)};

const freshState = () => ({
  spans: new Map(),
  lastSeq: 0,
  run: null,
  ended: false,
  /** The latest moment the trace shows (a span's end or start, an event): the time axis ends there once the trace ended. */
  lastMoment: 0,
  /**
   * Server clock minus browser clock, at most: the largest "at" of an update minus its arrival
   * (replayed updates are older and count less). Null until an update arrived.
   */
  skew: null,
  /** The trace expired under its retention policy: { expiredAt, mode } (TraceExpiredError); null while kept. */
  expired: null,
  selected: null,
  focusEvent: null,
  collapsed: new Set(),
  /** Read on demand, by span id: { key, attributes } (key: the span's status and end when read), { request }; by event id: the payload. */
  attributes: new Map(),
  requests: new Map(),
  payloads: new Map(),
});
let state = freshState();
const $ = (id) => document.getElementById(id);
$("run-id").textContent = runId === null ? runPath : runId;

function showMessage(text) {
  $("message").hidden = !text;
  $("message").textContent = text || "";
}

async function graphql(query, variables) {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...authHeaders() },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json().catch(() => ({}));
  if (body.errors && body.errors.length) {
    const error = new Error(body.errors.map((e) => e.message).join("; "));
    error.status = response.status;
    throw error;
  }
  return body.data;
}

function seen(...times) {
  for (const time of times) if (time) state.lastMoment = Math.max(state.lastMoment, Date.parse(time));
}

function upsertSpan(span) {
  seen(span.startedAt, span.endedAt);
  for (const event of span.events || []) seen(event.at);
  const known = state.spans.get(span.id);
  state.spans.set(span.id, { ...(known || { events: [] }), ...span, events: known ? known.events : span.events || [] });
}

function addEvent(spanId, event) {
  const span = state.spans.get(spanId);
  if (!span || span.events.some((e) => e.seq === event.seq)) return;
  seen(event.at);
  span.events.push(event);
  span.events.sort((a, b) => Number(a.seq) - Number(b.seq));
}

/** A connection's items. */
const nodesOf = (connection) => (connection ? connection.edges.map((edge) => edge.node) : []);

/** Every item of a connection: from its first page, the page after each page's endCursor until one says it is the last. */
async function readAll(firstPage, next) {
  const items = nodesOf(firstPage);
  for (let page = firstPage; page && page.pageInfo.hasNextPage; ) {
    page = await next(page.pageInfo.endCursor);
    items.push(...nodesOf(page));
  }
  return items;
}

/** The run with its attempts and pending approvals as plain lists (each fits its first page). */
const withLists = (run) => ({ ...run, attempts: nodesOf(run.attempts), pendingApprovals: nodesOf(run.pendingApprovals) });

/**
 * Reads the run and its whole trace; the live stream then continues after its lastSeq. lastSeq
 * comes with the first page, before any later one: what changes while the pages are read is
 * replayed by the stream (and merged by id and seq), so nothing is missed.
 */
async function loadSnapshot() {
  if (runId === null) throw Object.assign(new Error("This address names no run."), { final: true });
  const gen = generation;
  const data = await graphql(TRACE_QUERY, { id: runId, first: PAGE });
  const run = data.node && data.node.__typename === "Run" ? data.node : null;
  if (gen !== generation) throw stale();
  if (!run) throw Object.assign(new Error("No run with this id is visible to this API key or access token."), { final: true });
  const expired = run.trace && run.trace.__typename === "TraceExpiredError" ? run.trace : null;
  const trace = expired ? expired.summary : run.trace;
  const spans = trace
    ? await readAll(trace.spans, async (after) => ((await graphql(MORE_SPANS, { id: trace.id, first: PAGE, after })).node || {}).spans)
    : [];
  for (const span of spans) {
    span.events = await readAll(span.events, async (after) => ((await graphql(MORE_EVENTS, { id: span.id, first: PAGE, after })).node || {}).events);
  }
  if (gen !== generation) throw stale();
  delete run.trace;
  state.run = withLists(run);
  state.expired = expired && { expiredAt: expired.expiredAt, mode: expired.mode };
  state.spans.clear();
  state.lastSeq = trace ? Number(trace.lastSeq) : 0;
  for (const span of spans) upsertSpan(span);
  state.ended = Boolean(trace && trace.endedAt) || TERMINAL.includes(run.status) || Boolean(expired);
  if (trace && trace.endedAt) seen(trace.endedAt);
  scheduleRender();
}

async function refreshRun() {
  const gen = generation;
  const data = await graphql(RUN_QUERY, { id: runId });
  if (gen === generation && data.node && data.node.__typename === "Run") {
    state.run = withLists(data.node);
    scheduleRender();
  }
}

function applyUpdate(update) {
  const seq = Number(update.seq);
  if (update.kind === "RESYNC_REQUIRED") return "resync";
  if (update.kind === "TRACE_EXPIRED") {
    // It expired while shown: read what is left of it (nothing, or its skeleton), then stop listening.
    loadSnapshot().catch(() => undefined);
    state.ended = true;
    return "ended";
  }
  if (seq <= state.lastSeq) return "skip"; // already seen (a resent subscription after a reconnect)
  state.lastSeq = seq;
  const skew = Date.parse(update.at) - Date.now();
  state.skew = state.skew === null ? skew : Math.max(state.skew, skew);
  seen(update.at);
  if (update.span) upsertSpan(update.span);
  if (update.kind === "EVENT_APPENDED" && update.event && update.span) addEvent(update.span.id, update.event);
  // An attempt that starts or ends changes the run's list of attempts (and how the last one ended).
  if (update.span && update.span.kind === "ATTEMPT" && update.kind !== "SPAN_UPDATED") refreshRun().catch(() => undefined);
  if (update.kind === "TRACE_ENDED") {
    state.ended = true;
    return "ended";
  }
  scheduleRender();
  return "ok";
}

// ---- read on demand -----------------------------------------------------------------------------
const loading = new Set();

/** Reads a span's attributes once per state of the span (its status and end): a span's end adds attributes. */
async function loadAttributes(span) {
  const key = span.status + "|" + (span.endedAt || "");
  const known = state.attributes.get(span.id);
  if ((known && known.key === key) || loading.has("a" + span.id + key)) return;
  loading.add("a" + span.id + key);
  const gen = generation;
  try {
    const data = await graphql(SPAN_ATTRIBUTES, { id: span.id });
    if (gen !== generation) return;
    state.attributes.set(span.id, { key, attributes: parseJson(data.node ? data.node.attributes : "{}") || {} });
    scheduleRender();
  } finally {
    loading.delete("a" + span.id + key);
  }
}

/** Reads a model call's whole request, or an event's whole payload, when its button is pressed. */
async function loadWhole(kind, id) {
  const [query, store, field] = kind === "request" ? [SPAN_REQUEST, state.requests, "request"] : [EVENT_PAYLOAD, state.payloads, "payload"];
  if (store.has(id) || loading.has(kind + id)) return;
  loading.add(kind + id);
  const gen = generation;
  try {
    const data = await graphql(query, { id });
    if (gen !== generation) return;
    store.set(id, data.node ? data.node[field] : null);
  } catch (error) {
    showMessage("Could not load the " + field + ": " + error.message);
  } finally {
    loading.delete(kind + id);
    scheduleRender();
  }
}
`;
