// The trace viewer page's style and browser script (trace-viewer.ts serves them):
// plain CSS and JavaScript, no framework and no build step.
export const STYLE = `
:root { font: 14px/1.45 system-ui, sans-serif; color: #1d2330; background: #f7f8fa; }
header { padding: 12px 20px; background: #fff; border-bottom: 1px solid #dde1e8; position: sticky; top: 0; }
h1 { font-size: 16px; margin: 0 0 6px; } h1 code { font-size: 12px; color: #5b6474; }
.facts { display: flex; gap: 18px; flex-wrap: wrap; color: #5b6474; } .facts b { color: #1d2330; }
#question { margin: 6px 0 0; white-space: pre-wrap; max-height: 4.5em; overflow: hidden; }
#message { color: #a8321f; margin: 6px 0 0; }
main { padding: 12px 20px; }
.span { margin: 2px 0 2px 0; }
.span .children { margin-left: 18px; border-left: 1px dashed #c9ced8; padding-left: 8px; }
.row { display: flex; gap: 8px; align-items: baseline; padding: 2px 4px; border-radius: 4px; }
.row:hover { background: #eef1f6; }
.kind { font: 11px ui-monospace, monospace; padding: 0 5px; border-radius: 3px; background: #e3e7ef; }
.kind.RUN { background: #dfe9ff; } .kind.TURN { background: #ececec; } .kind.MODEL_CALL { background: #e6f6e6; }
.kind.TOOL_CALL { background: #fff1d6; } .kind.COMPACTION, .kind.SPILL { background: #f3e3ff; }
.name { font-weight: 500; }
.status { font-size: 11px; } .status.RUNNING { color: #1f62d0; } .status.OK { color: #2a7a2a; }
.status.ERROR { color: #b3261e; } .status.CANCELLED { color: #8a6d00; }
.duration, .tokens { color: #5b6474; font-variant-numeric: tabular-nums; font-size: 12px; }
.event { display: flex; gap: 8px; margin: 1px 0 1px 22px; font-size: 12px; color: #39414f; }
.event .ekind { font: 11px ui-monospace, monospace; color: #6a4fb3; min-width: 90px; }
.event .preview { white-space: pre-wrap; word-break: break-word; max-height: 2.9em; overflow: hidden; }
.event.open .preview { max-height: none; }
#answer-box { padding: 0 20px 20px; } #answer { white-space: pre-wrap; background: #fff; border: 1px solid #dde1e8; padding: 10px; }
`;

// Plain browser JavaScript: no framework, no bundler. Everything from the API is put in the page
// with textContent, never as HTML.
export const SCRIPT = String.raw`
"use strict";
const runId = decodeURIComponent(location.pathname.replace(/^\/traces\//, "").replace(/\/$/, ""));
const endpoint = "/graphql";
const wsEndpoint = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + endpoint;
const TERMINAL = ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"];

// The key: #key=… (then remembered and removed from the address bar), else the remembered one.
const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.get("key")) {
  localStorage.setItem("dossier.apiKey", fragment.get("key"));
  history.replaceState(null, "", location.pathname + location.search);
}
const apiKey = () => localStorage.getItem("dossier.apiKey") || "";
const authHeaders = () => (apiKey() ? { authorization: "Bearer " + apiKey() } : {});

// Spans and events come a page at a time (PAGE, the server's default page): the snapshot reads
// every page, asking for the next one after the last item until a page comes back short.
const PAGE = 500;
const SPAN_FIELDS = "id parentId kind name status startedAt endedAt usage { input output cached reasoning }";
const EVENT_FIELDS = "id seq kind preview size truncated";
const RUN_FIELDS = "id status question answer failureReason";
const RUN_QUERY = "query TraceViewerRun($id: ID!) { node(id: $id) { __typename ... on Run { " + RUN_FIELDS + " } } }";
const SPANS_PAGE = "spans(first: $first, after: $after) { " + SPAN_FIELDS + " events(first: $first) { " + EVENT_FIELDS + " } }";
const TRACE_QUERY = "query TraceViewerTrace($id: ID!, $first: Int!, $after: ID) { node(id: $id) { __typename ... on Run { " + RUN_FIELDS +
  " trace { id lastSeq endedAt " + SPANS_PAGE + " } } } }";
const MORE_SPANS = "query TraceViewerSpans($id: ID!, $first: Int!, $after: ID) { node(id: $id) { ... on Trace { " + SPANS_PAGE + " } } }";
const MORE_EVENTS = "query TraceViewerEvents($id: ID!, $first: Int!, $after: ID) { node(id: $id) { ... on Span { events(first: $first, after: $after) { " +
  EVENT_FIELDS + " } } } }";
const UPDATES = "subscription TraceViewerUpdates($runId: ID!, $afterSeq: String) { traceUpdates(runId: $runId, afterSeq: $afterSeq) { " +
  "seq kind at span { " + SPAN_FIELDS + " } event { seq kind preview size truncated } } }";

const state = { spans: new Map(), lastSeq: 0, run: null, ended: false };
const $ = (id) => document.getElementById(id);
$("run-id").textContent = runId;

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

function upsertSpan(span) {
  const known = state.spans.get(span.id);
  state.spans.set(span.id, { ...(known || { events: [] }), ...span, events: known ? known.events : span.events || [] });
}

function addEvent(spanId, event) {
  const span = state.spans.get(spanId);
  if (!span || span.events.some((e) => e.seq === event.seq)) return;
  span.events.push(event);
  span.events.sort((a, b) => a.seq - b.seq);
}

/** Every item of a list: from its first page, the next PAGE after the last one read until a page comes back short. */
async function readAll(firstPage, next) {
  const items = firstPage.slice();
  for (let page = firstPage; page.length >= PAGE; ) {
    page = await next(items[items.length - 1].id);
    items.push(...page);
  }
  return items;
}

/**
 * Reads the run and its whole trace; the live stream then continues after its lastSeq. lastSeq
 * comes with the first page, before any later one: what changes while the pages are read is
 * replayed by the stream (and merged by id and seq), so nothing is missed.
 */
async function loadSnapshot() {
  const data = await graphql(TRACE_QUERY, { id: runId, first: PAGE });
  const run = data.node && data.node.__typename === "Run" ? data.node : null;
  if (!run) throw Object.assign(new Error("No run with this id is visible to this API key."), { final: true });
  const trace = run.trace;
  const spans = trace
    ? await readAll(trace.spans, async (after) => ((await graphql(MORE_SPANS, { id: trace.id, first: PAGE, after })).node || { spans: [] }).spans)
    : [];
  for (const span of spans) {
    span.events = await readAll(span.events, async (after) => ((await graphql(MORE_EVENTS, { id: span.id, first: PAGE, after })).node || { events: [] }).events);
  }
  delete run.trace;
  state.run = run;
  state.spans.clear();
  state.lastSeq = trace ? trace.lastSeq : 0;
  for (const span of spans) upsertSpan(span);
  state.ended = Boolean(trace && trace.endedAt) || TERMINAL.includes(run.status);
  scheduleRender();
}

async function refreshRun() {
  const data = await graphql(RUN_QUERY, { id: runId });
  if (data.node && data.node.__typename === "Run") {
    state.run = data.node;
    scheduleRender();
  }
}

function applyUpdate(update) {
  const seq = Number(update.seq);
  if (update.kind === "RESYNC_REQUIRED") return "resync";
  if (seq <= state.lastSeq) return "skip"; // already seen (a resent subscription after a reconnect)
  state.lastSeq = seq;
  if (update.span) upsertSpan(update.span);
  if (update.kind === "EVENT_APPENDED" && update.event && update.span) addEvent(update.span.id, update.event);
  if (update.kind === "TRACE_ENDED") {
    state.ended = true;
    return "ended";
  }
  scheduleRender();
  return "ok";
}

// ---- graphql-transport-ws, spoken directly --------------------------------------------------
let socket = null;
let attempt = 0;

function setConnection(text) {
  $("connection").textContent = text;
  document.body.dataset.connection = text;
}

function subscribe() {
  if (state.ended) return finish();
  setConnection(attempt === 0 ? "connecting" : "reconnecting");
  const ws = new WebSocket(wsEndpoint, "graphql-transport-ws");
  socket = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init", payload: { headers: authHeaders() } }));
  ws.onmessage = async (message) => {
    const data = JSON.parse(message.data);
    if (data.type === "ping") return ws.send(JSON.stringify({ type: "pong" }));
    if (data.type === "connection_ack") {
      attempt = 0;
      setConnection("live");
      const variables = { runId, afterSeq: state.lastSeq > 0 ? String(state.lastSeq) : null };
      return ws.send(JSON.stringify({ id: "trace", type: "subscribe", payload: { query: UPDATES, variables } }));
    }
    if (data.type === "next") {
      if (data.payload.errors && data.payload.errors.length) return showMessage(data.payload.errors.map((e) => e.message).join("; "));
      const outcome = applyUpdate(data.payload.data.traceUpdates);
      if (outcome === "resync") {
        ws.onclose = null;
        ws.close(1000);
        await retrying(loadSnapshot);
        return subscribe();
      }
      if (outcome === "ended") {
        ws.onclose = null;
        ws.close(1000);
        return finish();
      }
      return;
    }
    if (data.type === "error") {
      showMessage(data.payload.map((e) => e.message).join("; "));
      ws.onclose = null;
      ws.close(1000);
      return setConnection("refused");
    }
    if (data.type === "complete") {
      // The stream ended without TRACE_ENDED in view (e.g. we resumed after it): settle from the run.
      ws.onclose = null;
      ws.close(1000);
      await retrying(refreshRun);
      if (state.run && TERMINAL.includes(state.run.status)) return finish();
      return subscribe();
    }
  };
  ws.onclose = (event) => {
    if (event.code === 4401 || event.code === 4403) {
      setConnection("refused");
      showMessage(event.reason || "The API key was refused.");
      $("key-form").hidden = false;
      return;
    }
    attempt += 1;
    setConnection("reconnecting");
    setTimeout(subscribe, Math.min(250 * 2 ** (attempt - 1), 5000));
  };
}

async function finish() {
  setConnection("ended");
  await retrying(refreshRun);
  scheduleRender();
}

async function retrying(task) {
  for (let n = 0; ; n += 1) {
    try {
      return await task();
    } catch (error) {
      if (error.final || (error.status && error.status < 500)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** n, 5000)));
    }
  }
}

// ---- rendering ------------------------------------------------------------------------------
let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function duration(span) {
  const end = span.endedAt ? Date.parse(span.endedAt) : Date.now();
  const ms = Math.max(0, end - Date.parse(span.startedAt));
  const text = ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  return span.endedAt ? text : text + " …";
}

function renderSpan(span, children) {
  const box = el("div", "span");
  box.dataset.spanId = span.id;
  box.dataset.kind = span.kind;
  box.dataset.status = span.status;
  box.dataset.testid = "span";
  const row = el("div", "row");
  row.append(el("span", "kind " + span.kind, span.kind), el("span", "name", span.name), el("span", "status " + span.status, span.status),
    el("span", "duration", duration(span)));
  if (span.usage) row.append(el("span", "tokens", "in " + span.usage.input + " · out " + span.usage.output));
  box.append(row);
  for (const event of span.events) {
    const line = el("div", "event");
    line.dataset.testid = "event";
    line.dataset.kind = event.kind;
    line.append(el("span", "ekind", event.kind), el("span", "preview", event.preview + (event.truncated ? " …" : "")));
    line.title = event.size + " bytes; click to expand";
    line.onclick = () => line.classList.toggle("open");
    box.append(line);
  }
  const kids = children.get(span.id) || [];
  if (kids.length) {
    const list = el("div", "children");
    for (const kid of kids) list.append(renderSpan(kid, children));
    box.append(list);
  }
  return box;
}

function render() {
  const spans = [...state.spans.values()].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt) || (a.id < b.id ? -1 : 1));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    if (span.parentId && state.spans.has(span.parentId)) {
      if (!children.has(span.parentId)) children.set(span.parentId, []);
      children.get(span.parentId).push(span);
    } else roots.push(span);
  }
  const tree = $("tree");
  tree.replaceChildren(...roots.map((root) => renderSpan(root, children)));
  const usage = spans.reduce((sum, s) => ({ input: sum.input + (s.usage ? s.usage.input : 0), output: sum.output + (s.usage ? s.usage.output : 0) }), { input: 0, output: 0 });
  $("usage").textContent = "in " + usage.input + " · out " + usage.output;
  $("span-count").textContent = String(spans.length);
  $("last-seq").textContent = String(state.lastSeq);
  if (state.run) {
    $("run-status").textContent = state.run.status;
    document.body.dataset.runStatus = state.run.status;
    $("question").textContent = state.run.question;
    const settled = state.run.answer || state.run.failureReason;
    $("answer-box").hidden = !settled;
    $("answer").textContent = settled || "";
  }
}

// Running spans' durations tick while the page is open.
setInterval(() => {
  for (const span of state.spans.values()) if (!span.endedAt) return scheduleRender();
}, 500);

$("key-form").onsubmit = (event) => {
  event.preventDefault();
  localStorage.setItem("dossier.apiKey", $("key-input").value.trim());
  location.reload();
};

(async () => {
  try {
    await retrying(loadSnapshot);
    showMessage("");
    subscribe();
  } catch (error) {
    setConnection("refused");
    showMessage(error.message);
    $("run-status").textContent = "unknown";
    if (!error.final) $("key-form").hidden = false;
  }
})();
`;
