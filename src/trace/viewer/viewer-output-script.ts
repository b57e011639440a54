// The trace viewer's browser script, output part: the running model call's text as it grows. A
// second subscription on the trace's socket (runOutput) collects each running call's text; the
// tree shows it under the call's row until the call ends, when its message is the log's (and the
// answer box shows the answer). Subscribing again after a reconnect starts the running call's
// text over: its first delta then holds everything so far.
import { OUTPUT } from "./viewer-documents.js";

export const OUTPUT_SCRIPT = `
// ---- live model output ------------------------------------------------------------------------
const OUTPUT = ${JSON.stringify(OUTPUT)};
/** The text so far of each running model call, by span id. */
const liveOutput = new Map();

function subscribeOutput(ws) {
  liveOutput.clear();
  ws.send(JSON.stringify({ id: "output", type: "subscribe", payload: { query: OUTPUT, variables: { runId } } }));
}

/** Applies one runOutput message; errors and the stream's end change nothing the trace does not show. */
function applyOutput(data) {
  if (data.type !== "next" || !data.payload.data) return;
  const update = data.payload.data.runOutput;
  if (update.kind === "TEXT_DELTA") liveOutput.set(update.modelCallSpanId, (liveOutput.get(update.modelCallSpanId) || "") + update.text);
  else if (update.kind === "MESSAGE_DONE") liveOutput.delete(update.modelCallSpanId);
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
