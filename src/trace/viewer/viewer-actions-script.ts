// The trace viewer's browser script, acting on the run: Stop (cancelRun, in the mode chosen) while it has not
// settled, Pause (pauseRun) or Resume (resumeRun, also withdrawing a pause not yet reached), and Approve or Reject (decideToolCall, a rejection with an optional reason) for each
// tool call a WAITING run waits on. Each shows only when the page's key or token may do it
// (Run.viewerOperations); a refusal the server still gives is shown as it came. The reason is
// the model's next input, as a steering message is: its box shows only where the page may steer
// the run (ADMIT), so a token's page on a run an API key admitted rejects without one.
import { CANCEL_RUN, DECIDE, PAUSE_RUN, RESUME_RUN } from "./viewer-documents.js";

export const ACTIONS_SCRIPT = `
// ---- acting on the run ---------------------------------------------------------------------
const CANCEL_RUN = ${JSON.stringify(CANCEL_RUN)};
const DECIDE = ${JSON.stringify(DECIDE)};
const PAUSE_RUN = ${JSON.stringify(PAUSE_RUN)};
const RESUME_RUN = ${JSON.stringify(RESUME_RUN)};
/** What is being sent: "stop", or a toolCallId; its buttons are disabled meanwhile. */
const acting = new Set();
/** Each waiting call's reason typed so far, by toolCallId: kept across redraws. */
const reasons = new Map();

const may = (operation) => Boolean(state.run && (state.run.viewerOperations || []).includes(operation));

/** Sends a mutation for the run, says why when it was refused, then reads the run again. */
async function act(what, query, variables, field) {
  if (acting.has(what)) return;
  acting.add(what);
  scheduleRender();
  try {
    const result = (await graphql(query, variables))[field];
    if (result.__typename.endsWith("Error")) showMessage(result.message);
    await refreshRun();
  } catch (error) {
    showMessage(error.message);
  } finally {
    acting.delete(what);
    scheduleRender();
  }
}

/** Stop with its mode while the run may be stopped; the stop asked for (pending or taken) once there is one. */
function renderStop() {
  const stop = $("stop");
  const request = state.run && state.run.stopRequest;
  stop.hidden = !state.run || TERMINAL.includes(state.run.status) || !may("CANCEL");
  stop.disabled = acting.has("stop");
  $("stop-mode").hidden = stop.hidden;
  $("stop-request").hidden = !request;
  $("stop-request").textContent = request ? "stop requested: " + request.mode : "";
  // Resume for a paused run, or one whose pause is still pending; Pause otherwise.
  const pause = $("pause");
  const resumes = Boolean(state.run && (state.run.status === "PAUSED" || state.run.pauseRequestedAt));
  pause.hidden = stop.hidden;
  pause.textContent = resumes ? "Resume" : "Pause";
  pause.disabled = acting.has("pause");
}

$("stop").onclick = () => act("stop", CANCEL_RUN, { runId, mode: $("stop-mode").value }, "cancelRun");
$("pause").onclick = () =>
  state.run && (state.run.status === "PAUSED" || state.run.pauseRequestedAt)
    ? act("pause", RESUME_RUN, { runId }, "resumeRun")
    : act("pause", PAUSE_RUN, { runId }, "pauseRun");

/** Approve, a reason (where the credential may steer the run) and Reject for one waiting call; nothing when it may not decide. */
function decisionControls(approval) {
  if (!may("DECIDE")) return "";
  const busy = acting.has(approval.toolCallId);
  const steers = may("ADMIT");
  const box = el("div", "decide");
  box.onclick = (event) => event.stopPropagation();
  const decide = (decision) => {
    const reason = steers ? (reasons.get(approval.toolCallId) || "").trim() : "";
    // The request shown is the one decided (approvalId): never another the call's id came to name.
    const input = { runId, toolCallId: approval.toolCallId, approvalId: approval.id, decision, ...(reason ? { reason } : {}) };
    act(approval.toolCallId, DECIDE, { input }, "decideToolCall");
  };
  const approve = el("button", "approve", "Approve");
  approve.dataset.testid = "approve";
  approve.onclick = () => decide("APPROVE");
  const reason = el("input", "reason");
  reason.dataset.testid = "reject-reason";
  reason.placeholder = "reason (optional)";
  reason.maxLength = 2000;
  reason.value = reasons.get(approval.toolCallId) || "";
  reason.oninput = () => reasons.set(approval.toolCallId, reason.value);
  const reject = el("button", "reject", "Reject");
  reject.dataset.testid = "reject";
  reject.onclick = () => decide("REJECT");
  const controls = steers ? [approve, reason, reject] : [approve, reject];
  for (const control of controls) control.disabled = busy;
  box.append(...controls);
  return box;
}
`;
