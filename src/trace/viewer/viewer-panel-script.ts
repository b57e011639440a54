// The trace viewer's browser script, the details panel of the selected span: its facts, why it
// was interrupted or failed, its attributes (read when it is selected), its events with their
// previews, and the whole payload of an event or a model call's whole request, read on demand.
export const PANEL_SCRIPT = `
// ---- the details panel ------------------------------------------------------------------------
/** Drawn again only when what it shows changed, so a reader's scroll and selection in it stay. */
function renderPanel(ctx) {
  const panel = $("panel");
  const span = state.selected ? state.spans.get(state.selected) : null;
  if (!span) {
    if (panel.dataset.signature !== "none") {
      panel.dataset.signature = "none";
      panel.replaceChildren(el("p", "hint", "Select a span or an event to see its attributes, its events and their whole payloads."));
    }
    return;
  }
  loadAttributes(span).catch((error) => showMessage(error.message));
  const read = state.attributes.get(span.id);
  const signature = [span.id, span.status, span.endedAt, span.events.length, read ? read.key : "", state.requests.has(span.id),
    span.events.filter((e) => state.payloads.has(e.id)).length, state.focusEvent, state.run && state.run.attempts.length,
    JSON.stringify(heldCallOf(span))].join("|");
  const live = $("panel-duration");
  if (panel.dataset.signature === signature) {
    if (live) live.textContent = durationText(span);
    return;
  }
  panel.dataset.signature = signature;
  panel.dataset.spanId = span.id;
  panel.replaceChildren(panelHead(span), panelFacts(span, ctx), ...panelReason(span), ...panelAttributes(span, read), panelEvents(span, ctx));
  const focused = state.focusEvent && panel.querySelector('[data-event-id="' + CSS.escape(state.focusEvent) + '"]');
  if (focused) {
    focused.classList.add("focused");
    focused.scrollIntoView({ block: "nearest" });
  }
}

function panelHead(span) {
  const head = el("div", "panel-head");
  const title = el("h2", "", "");
  title.append(el("span", "kind " + span.kind, KIND_LABEL[span.kind] || span.kind), " ", el("span", "name", span.name), " ", statusChip(span.status));
  const close = el("button", "close", "×");
  close.setAttribute("aria-label", "Close the details");
  close.onclick = () => select(null);
  head.append(title, close);
  return head;
}

function fact(list, name, value, id) {
  const dd = el("dd", "", value);
  if (id) dd.id = id;
  list.append(el("dt", "", name), dd);
}

function panelFacts(span, ctx) {
  const list = el("dl", "panel-facts");
  list.dataset.testid = "panel-facts";
  fact(list, "started", "+" + formatMs(Date.parse(span.startedAt) - ctx.axis.start) + " · " + new Date(span.startedAt).toLocaleTimeString());
  fact(list, "duration", durationText(span), "panel-duration");
  if (span.kind === "MODEL_CALL") fact(list, "tokens", usageText(span.usage || ZERO_USAGE));
  else if (hasUsage(usageOf(span, ctx.tree, ctx.memo))) fact(list, "tokens below", usageText(usageOf(span, ctx.tree, ctx.memo)));
  if (span.kind === "MODEL_CALL" && span.endedAt) fact(list, "cost", span.costUnpriced ? "unpriced (its model had no price)" : costText(ownCost(span)), "panel-cost");
  else if (span.kind !== "MODEL_CALL" && hasCost(costOf(span, ctx.tree, ctx.memo))) fact(list, "cost below", costText(costOf(span, ctx.tree, ctx.memo)), "panel-cost");
  const attempt = span.kind === "ATTEMPT" ? attemptOfSpan(span.id) : null;
  if (attempt) fact(list, "outcome", attempt.outcome || "running");
  return list;
}

/** Why the span did not end well: the interruption's reason, or the error, first and in colour. */
function panelReason(span) {
  const reason = span.events.find((e) => e.kind === "INTERRUPTION") || span.events.find((e) => e.kind === "ERROR");
  const attempt = span.kind === "ATTEMPT" ? attemptOfSpan(span.id) : null;
  if (!reason && !(attempt && interruptedText(attempt))) return [];
  const interrupted = span.status === "INTERRUPTED" || (reason && reason.kind === "INTERRUPTION");
  const box = el("div", "callout " + (interrupted ? "warn" : "bad"));
  box.dataset.testid = "panel-reason";
  const title = interrupted ? "Interrupted" + (attempt && interruptedText(attempt) ? ": " + interruptedText(attempt) : "") : "Error";
  box.append(el("b", "", title), el("span", "", reason ? " " + reason.preview : ""));
  return [box];
}

function panelAttributes(span, read) {
  const heading = el("h3", "", "Attributes");
  if (!read) return [heading, el("p", "hint", "loading…")];
  const attributes = read.attributes;
  const parts = [heading];
  const budget = budgetOf(attributes.budget);
  if (budget) parts.push(budgetGauge(budget));
  const table = el("table", "attributes");
  table.dataset.testid = "attributes";
  for (const [key, value] of Object.entries(attributes)) {
    if ((key === "budget" && budget) || key === "request") continue;
    const row = el("tr");
    row.append(el("th", "", key), el("td", "", typeof value === "string" ? value : JSON.stringify(value)));
    table.append(row);
  }
  if (table.childElementCount > 0) parts.push(table);
  if (Array.isArray(attributes.request)) parts.push(requestBlock(span, attributes.request));
  return parts;
}

/** A model call's request: how it was recorded, and the whole request (references read back from the log) on demand. */
function requestBlock(span, recorded) {
  const box = el("div", "request");
  const references = recorded.filter((m) => m && (m.logMessage || (Array.isArray(m.parts) && m.parts.some((part) => part.logMessage)))).length;
  box.append(el("p", "", "Request: " + recorded.length + " messages, " + references + " of them as sent read back from the conversation log."));
  if (state.requests.has(span.id)) {
    const text = state.requests.get(span.id);
    const messages = text ? parseJson(text) : null;
    const whole = el("div", "messages");
    whole.dataset.testid = "request";
    if (!Array.isArray(messages)) whole.append(el("pre", "payload", text === null ? "(none)" : text));
    else whole.append(...messages.map(messageBlock));
    box.append(whole);
  } else {
    const button = el("button", "load", "Load the whole request");
    button.dataset.testid = "load-request";
    button.onclick = () => loadWhole("request", span.id);
    box.append(button);
  }
  return box;
}

/** One message of a request: its role, its text, the tool calls it asks for. */
function messageBlock(message) {
  const block = el("div", "message " + message.role);
  block.append(el("span", "role", message.role + (message.toolCallId ? " · " + message.toolCallId : "")));
  if (message.content) block.append(el("pre", "payload", message.content));
  for (const call of message.toolCalls || []) {
    // The arguments as the tool got them (argumentsEl), between the call's name and id.
    const line = visibleEl("pre", "payload call", "→ " + call.name + " ");
    appendArguments(line, call.arguments);
    appendVisible(line, "  (" + call.id + ")");
    block.append(line);
  }
  return block;
}

function panelEvents(span, ctx) {
  const section = el("section", "panel-events");
  section.append(el("h3", "", "Events (" + span.events.length + ")"));
  if (span.events.length === 0) section.append(el("p", "hint", "none"));
  for (const event of span.events) {
    const item = el("div", "pevent " + event.kind);
    item.dataset.testid = "panel-event";
    item.dataset.kind = event.kind;
    item.dataset.eventId = event.id;
    const head = el("div", "pevent-head");
    head.append(el("span", "ekind", eventLabel(event)), el("span", "when", "+" + formatMs(Date.parse(event.at) - ctx.axis.start)),
      el("span", "size", int(event.size) + " bytes"));
    item.append(head);
    const whole = state.payloads.get(event.id);
    const budget = event.kind === "BUDGET" ? budgetOf(whole === undefined ? event.preview : whole) : null;
    if (budget) item.append(budgetGauge(budget));
    if (event.kind === "TOOL_INPUT") item.append(...readableInputEls(span, event, whole));
    // A held call's request and a tool's input read as what runs: hidden characters shown as escapes.
    const show = CALL_EVENTS.has(event.kind) ? visibleEl : el;
    if (whole !== undefined) {
      const text = show("pre", "payload", whole === null ? "(gone)" : whole);
      text.dataset.testid = "payload";
      item.append(text);
    } else if (!budget) item.append(show("pre", "preview", event.preview + (event.truncated ? " …" : "")));
    if (whole === undefined && (event.truncated || budget)) {
      const button = el("button", "load", "Load the whole payload (" + int(event.size) + " bytes)");
      button.dataset.testid = "load-payload";
      button.onclick = () => loadWhole("payload", event.id);
      item.append(button);
    }
    section.append(item);
  }
  return section;
}

/**
 * A tool call's input as the tool gets it (argumentsEl), above the text the model wrote: a held
 * call's from its whole arguments, with the server's warnings; another's from its whole payload,
 * or its preview when that is whole, and only when it reads otherwise than the model's text.
 */
function readableInputEls(span, event, whole) {
  const held = heldCallOf(span);
  const raw = held ? held.arguments : typeof whole === "string" ? whole : !event.truncated ? event.preview : null;
  const blankRun = (text) => [...text.matchAll(BLANK_RUN)].some((match) => match[1] !== undefined);
  if (raw === null || (!held && decodedArguments(raw) === raw && !blankRun(raw))) return [];
  const shown = argumentsEl("pre", "payload readable", raw);
  shown.dataset.testid = "readable-arguments";
  return [el("span", "hint", "As the tool gets them:"), ...warningEls(held ? held.readableArguments.warnings : []), shown,
    el("span", "hint", "As the model wrote them:")];
}
`;
