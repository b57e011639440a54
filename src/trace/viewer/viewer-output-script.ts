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
/** The text so far of each running model call, by span id. */
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

/** Adds a call's delta: the part past what is shown already (a new subscription brings the call's text again). */
function addOutput(stream, spanId, text) {
  const start = stream.got.get(spanId) || 0;
  const end = start + text.length;
  stream.got.set(spanId, end);
  const shown = liveOutput.get(spanId) || "";
  if (end <= shown.length || start > shown.length) return false;
  liveOutput.set(spanId, shown + text.slice(shown.length - start));
  return true;
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

/** A running model call's text so far, as a row under the call; null when it has none (or has ended). */
function liveOutputRow(span, depth) {
  const text = span.kind === "MODEL_CALL" && !span.endedAt ? liveOutput.get(span.id) : undefined;
  if (!text) return null;
  const row = el("div", "row output-row");
  row.dataset.testid = "live-output";
  const label = el("div", "label");
  label.style.paddingLeft = depth * 16 + 18 + "px";
  label.append(el("span", "ekind", "writing"), el("pre", "output", text));
  row.append(label);
  return row;
}
`;
