// The trace viewer's browser script, output part: the running model call's text as it grows. A
// second subscription on the trace's socket (runOutput) collects each running call's text; the
// tree shows it under the call's row until the call ends, when its message is the log's (and the
// answer box shows the answer). A subscription starts each running call's text over (its first
// deltas bring everything so far), so only what goes past the text already shown is added. One
// that ends before the run's end (RESYNC_REQUIRED after a burst or a lost link between
// instances, an error) is opened again, after a wait that grows while they keep ending.
import { OUTPUT } from "./viewer-documents.js";

export const OUTPUT_SCRIPT = `
// ---- live model output ------------------------------------------------------------------------
const OUTPUT = ${JSON.stringify(OUTPUT)};
/** Each running model call's output so far, by span id (liveEntry). */
const liveOutput = new Map();
/** The open output subscription: its id, the characters of each call it brought, whether the run is done. */
let outputStream = null;
let outputCount = 0;
/** Subscriptions in a row that ended before the run's end without bringing any text. */
let outputRetries = 0;

function subscribeOutput(ws) {
  outputCount += 1;
  outputStream = { id: "output-" + outputCount, ws, got: new Map(), done: false };
  ws.send(JSON.stringify({ id: outputStream.id, type: "subscribe", payload: { query: OUTPUT, variables: { runId } } }));
}

/** The output subscription ended before the run's end: opened again on the same socket after a wait. */
function resubscribeOutput(stream) {
  if (stream !== outputStream || stream.done) return;
  stream.done = true;
  if (stream.ws.readyState === WebSocket.OPEN) stream.ws.send(JSON.stringify({ id: stream.id, type: "complete" }));
  outputRetries += 1;
  const gen = generation;
  setTimeout(() => {
    if (gen !== generation || stream !== outputStream || state.ended || socket !== stream.ws || stream.ws.readyState !== WebSocket.OPEN) return;
    subscribeOutput(stream.ws);
  }, Math.min(250 * 2 ** (outputRetries - 1), 5000));
}

/** How many of a running call's last characters the page shows: the whole text is the answer's (or the trace's) once the call ended. */
const LIVE_TAIL = 16384;

/**
 * A running call's output row, made once and kept across renders (the tree moves it): each delta
 * is appended as a text node, and characters past the last LIVE_TAIL are taken off the front.
 */
function liveEntry(spanId) {
  let entry = liveOutput.get(spanId);
  if (entry) return entry;
  const row = el("div", "row output-row");
  row.dataset.testid = "live-output";
  const label = el("div", "label");
  const note = el("span", "output-note");
  note.dataset.testid = "live-output-earlier";
  note.hidden = true;
  const pre = el("pre", "output");
  label.append(el("span", "ekind", "writing"), note, pre);
  row.append(label);
  entry = { chars: 0, shown: 0, row, label, note, pre };
  liveOutput.set(spanId, entry);
  return entry;
}

function appendOutput(entry, text) {
  entry.chars += text.length;
  const tail = text.length > LIVE_TAIL ? text.slice(-LIVE_TAIL) : text;
  entry.pre.append(document.createTextNode(tail));
  entry.shown += tail.length;
  while (entry.shown > LIVE_TAIL) {
    const first = entry.pre.firstChild;
    const excess = entry.shown - LIVE_TAIL;
    if (first.data.length <= excess) {
      entry.shown -= first.data.length;
      first.remove();
    } else {
      first.deleteData(0, excess);
      entry.shown -= excess;
    }
  }
  const earlier = entry.chars - entry.shown;
  entry.note.hidden = earlier === 0;
  entry.note.textContent = earlier ? int(earlier) + " earlier characters · " : "";
}

/**
 * Adds a call's delta: the part past what is shown already (a new subscription brings the call's
 * text again). True when the call's row is new, and the tree must place it.
 */
function addOutput(stream, spanId, text) {
  const start = stream.got.get(spanId) || 0;
  const end = start + text.length;
  stream.got.set(spanId, end);
  const had = liveOutput.get(spanId);
  const chars = had ? had.chars : 0;
  if (end <= chars || start > chars) return false;
  const entry = liveEntry(spanId);
  appendOutput(entry, text.slice(chars - start));
  return !entry.row.isConnected;
}

/** Applies one runOutput message; a stream that ends before RUN_DONE (or fails) is opened again. */
function applyOutput(data) {
  const stream = outputStream;
  if (!stream || data.id !== stream.id || stream.done) return;
  if (data.type === "error" || data.type === "complete") return resubscribeOutput(stream);
  if (data.type !== "next") return;
  if (!data.payload.data) return resubscribeOutput(stream);
  const update = data.payload.data.runOutput;
  if (update.kind === "RESYNC_REQUIRED") return resubscribeOutput(stream);
  if (update.kind === "RUN_DONE") {
    stream.done = true;
    return;
  }
  if (update.kind === "TEXT_DELTA") {
    outputRetries = 0;
    if (!addOutput(stream, update.modelCallSpanId, update.text || "")) return;
  } else if (update.kind === "MESSAGE_DONE") liveOutput.delete(update.modelCallSpanId);
  else return;
  scheduleRender();
}

/** A running model call's text so far, as a row under the call (the same one every time); null when it has none (or has ended). */
function liveOutputRow(span, depth) {
  const entry = liveOutput.get(span.id);
  if (!entry) return null;
  if (span.kind !== "MODEL_CALL" || span.endedAt) {
    liveOutput.delete(span.id);
    return null;
  }
  if (!entry.chars) return null;
  setStyle(entry.label, "padding-left", depth * 16 + 18 + "px");
  return entry.row;
}
`;
