// The trace viewer's browser script, last part: drawing the state at most once a frame — the
// run's header (status, question, totals), why it failed, which attempts were interrupted or which
// tool calls a waiting run waits on, the tree, the details panel and the answer — keeping running
// spans' bars growing, and starting (again, when another key or token is given or accepted).
export const RENDER_SCRIPT = `
// ---- rendering --------------------------------------------------------------------------------
let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

const STOPPED_TEXT = { TIMED_OUT: "the run reached its deadline", CANCELLED: "the run was cancelled" };

/** A failed, timed-out or cancelled run says why at the top: its reason and the message recorded on its root span. */
function renderFailure(spans) {
  const box = $("failure");
  const run = state.run;
  const failed = run && ["FAILED", "TIMED_OUT", "CANCELLED"].includes(run.status);
  box.hidden = !failed;
  if (!failed) return;
  const root = spans.find((span) => span.kind === "RUN");
  if (root) loadAttributes(root).catch(() => undefined);
  const read = root && state.attributes.get(root.id);
  const detail = (read && read.attributes.error) || STOPPED_TEXT[run.status] || "";
  const title = el("b", "", run.status === "FAILED" ? "Failed" : run.status === "TIMED_OUT" ? "Timed out" : "Cancelled");
  const reason = el("code", "", run.failureReason || "");
  reason.dataset.testid = "failure-reason";
  const text = el("span", "", detail);
  text.dataset.testid = "failure-message";
  box.replaceChildren(title, run.failureReason ? reason : "", text);
}

/** A trace that reached its bound says so at the top, from the RUN span's TRUNCATED event. */
function renderTruncated(spans) {
  const box = $("truncated");
  const root = spans.find((span) => span.kind === "RUN");
  const event = root && root.events.find((e) => e.kind === "TRUNCATED");
  box.hidden = !event;
  if (!event) return;
  box.replaceChildren(el("b", "", "Trace truncated"), el("span", "", "on " + new Date(event.at).toLocaleString() +
    ": it reached its bound of spans and events (MAX_TRACE_RECORDS). From then on it keeps only span ends and model usage; the run itself went on, and its usage is complete."));
  box.onclick = () => select(root.id, event.id);
}

/** Each attempt that did not complete: how it ended and why, from its span's INTERRUPTION event. */
function renderInterruptions() {
  const box = $("interruptions");
  const attempts = ((state.run && state.run.attempts) || []).filter((a) => interruptedText(a));
  box.hidden = attempts.length === 0;
  box.replaceChildren(
    ...attempts.map((attempt) => {
      const span = attempt.span && state.spans.get(attempt.span.id);
      const why = span && span.events.find((e) => e.kind === "INTERRUPTION");
      const line = el("div", "interruption");
      line.dataset.testid = "interruption";
      line.append(el("b", "", "Attempt " + attempt.number + " interrupted"), el("span", "outcome", interruptedText(attempt)),
        el("span", "", why ? why.preview : ""));
      if (span) line.onclick = () => select(span.id, why && why.id);
      return line;
    }),
  );
}

/**
 * A WAITING run lists the tool calls that wait for a decision, with Approve and Reject where the
 * credential may decide (a reason's box too where it may steer the run); each leads to its span's
 * APPROVAL_REQUESTED event. Drawn again only when what it shows changed, so a reason being typed
 * keeps its focus.
 */
function renderWaiting(spans) {
  const box = $("waiting");
  const run = state.run;
  const pending = (run && run.status === "WAITING" && run.pendingApprovals) || [];
  box.hidden = pending.length === 0;
  const requested = spans.filter((s) => s.events.some((e) => e.kind === "APPROVAL_REQUESTED")).length;
  // A request replaced under the same call id (another approval, arguments or expiry) is drawn anew: Approve decides the one shown.
  const shown = pending.map((a) => [a.toolCallId, a.id, a.toolName, a.mcpTool, a.arguments, a.expiresAt]);
  const signature = JSON.stringify([shown, may("DECIDE"), may("ADMIT"), [...acting], requested]);
  if (box.dataset.signature === signature) return;
  box.dataset.signature = signature;
  box.replaceChildren(
    ...(pending.length ? [el("b", "", "Waiting for a decision (decideToolCall)")] : []),
    ...pending.map((approval) => {
      const marker = '"toolCallId":' + JSON.stringify(approval.toolCallId);
      const span = spans.find((s) => s.events.some((e) => e.kind === "APPROVAL_REQUESTED" && e.preview.includes(marker)));
      const event = span && span.events.find((e) => e.kind === "APPROVAL_REQUESTED" && e.preview.includes(marker));
      const line = el("div", "waiting-call");
      line.dataset.testid = "waiting-call";
      line.dataset.toolCallId = approval.toolCallId;
      // What the person approves is shown with its hidden characters as escapes (visibleEl), the
      // arguments as the tool gets them with a warning for what was hidden or disguised (argumentsEls).
      // An MCP tool's offered name is fitted to model APIs: the server and the tool's own name say which tool runs.
      line.append(visibleEl("code", "", approval.toolName), ...(approval.mcpTool ? [visibleEl("span", "mcp-tool", "MCP " + approval.mcpTool)] : []),
        ...argumentsEls(approval.arguments, approval.readableArguments.warnings),
        el("span", "expires", "expires " + new Date(approval.expiresAt).toLocaleString()), decisionControls(approval));
      if (span) line.onclick = () => select(span.id, event.id);
      return line;
    }),
  );
}

function renderHeader(spans) {
  const run = state.run;
  // Each span's own usage: a model call's, and past a trace's bound that of the calls folded into a span above.
  const usage = spans.reduce((sum, span) => addUsage(sum, span.usage), ZERO_USAGE);
  $("usage").textContent = usageText(usage);
  // The run's cost: every span's own cost (Run.cost), and whether a model call had no price.
  const cost = spans.reduce((sum, span) => addCost(sum, ownCost(span)), ZERO_COST);
  $("cost").textContent = costText(cost);
  $("cost").title = cost.unpriced ? "A model call had no price: its cost is not counted." : "";
  $("span-count").textContent = String(spans.length);
  $("last-seq").textContent = String(state.lastSeq);
  const root = spans.find((span) => span.kind === "RUN");
  $("run-duration").textContent = root ? durationText(root) : "–";
  if (!run) return;
  $("run-status").textContent = run.status;
  $("run-status").className = "badge " + run.status;
  document.body.dataset.runStatus = run.status;
  $("question").textContent = run.question;
  $("model").textContent = run.model || "–";
  $("answer-box").hidden = !run.answer;
  $("answer").textContent = run.answer || "";
}

/** An expired trace says so at the top: when, and what its retention policy kept of it. */
function renderExpired() {
  const box = $("expired");
  const expired = state.expired;
  box.hidden = !expired;
  if (!expired) return;
  const kept = expired.mode === "KEEP_SUMMARY" ? "its spans' skeleton is kept (no events, payloads or attributes)" : "nothing of it is kept";
  box.replaceChildren(el("b", "", "Trace expired on " + new Date(expired.expiredAt).toLocaleString()), el("span", "", " — " + kept + " (trace retention)."));
}

function render() {
  const { spans, ctx } = renderTree();
  renderHeader(spans);
  renderExpired();
  renderFailure(spans);
  renderTruncated(spans);
  renderInterruptions();
  renderWaiting(spans);
  renderStop();
  renderPanel(ctx);
}

// While the trace runs, running spans grow and the time axis with them.
setInterval(() => {
  if (!state.ended && [...state.spans.values()].some((span) => !span.endedAt)) scheduleRender();
}, 250);

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && state.selected) select(null);
});

// ---- starting, and starting over with another key or token ---------------------------------------
/** The run is not visible (or the credential was refused): say why and ask for a key or token. */
function refuse(text) {
  closeSocket();
  setConnection("refused");
  showMessage(text);
  $("run-status").textContent = "unknown";
  $("run-status").className = "badge";
  delete document.body.dataset.runStatus;
  $("key-form").hidden = false;
}

/** Reads the run and follows it with the current credential, dropping whatever an earlier one showed. */
async function start() {
  generation += 1;
  const gen = generation;
  closeSocket();
  attempt = 0;
  state = freshState();
  liveOutput.clear();
  $("key-form").hidden = true;
  $("run-status").textContent = "…";
  showMessage("");
  setConnection("connecting");
  scheduleRender();
  try {
    await retrying(loadSnapshot);
    if (gen !== generation) return;
    subscribe();
  } catch (error) {
    if (gen === generation && !error.stale) refuse(error.message);
  }
}

$("key-form").onsubmit = (event) => {
  event.preventDefault();
  const typed = $("key-input").value.trim();
  if (!typed) return;
  credential = typed;
  $("key-input").value = "";
  start();
};

// Another key or token in the fragment, without a reload. The page that frames the viewer hands
// it one so (only an origin VIEWER_FRAME_ANCESTORS lists may frame it): taken at once. A tab of its
// own can have its fragment changed, unseen, by the page that opened it: the run shown stays, and
// the key or token given waits in the form until the person chooses Open.
const framed = window.top !== window.self;
window.addEventListener("hashchange", () => {
  const given = takeHashCredential();
  if (!given) return;
  if (framed) {
    credential = given;
    start();
  } else if (given !== credential) {
    $("key-input").value = given;
    $("key-form").hidden = false;
    showMessage("The address gave another API key or access token: choose Open to show the run with it instead.");
  }
});

start();
`;
