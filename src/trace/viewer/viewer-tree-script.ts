// The trace viewer's browser script, the span tree and its waterfall: one row per span (kind,
// name, status, duration, tokens) with a bar placed by its start and sized by its duration on the
// trace's time axis, and below it the span's children and events in the order they happened — so
// a turn's answer comes after the model call that wrote it. Rows collapse; a click selects.
export const TREE_SCRIPT = `
// ---- the span tree and its waterfall ----------------------------------------------------------
const KIND_LABEL = { RUN: "run", ATTEMPT: "attempt", TURN: "turn", MODEL_CALL: "model", TOOL_CALL: "tool", MCP_CALL: "mcp",
  COMPACTION: "compaction", SPILL: "spill", SKILL_LOAD: "skill" };
/** How an attempt that did not complete ended (RunAttemptOutcome), in words. */
const OUTCOME_TEXT = { CRASHED: "process died", LEASE_LOST: "lease lost", HANDED_BACK: "worker stopped" };

/**
 * How an attempt that did not complete ended, in words; null for one that completed, or that
 * ended to wait for decisions on tool calls (HANDED_BACK with its span OK): that one was not interrupted.
 */
function interruptedText(attempt) {
  const span = attempt.span && state.spans.get(attempt.span.id);
  if (attempt.outcome === "HANDED_BACK" && span && span.status === "OK") return null;
  return OUTCOME_TEXT[attempt.outcome] || null;
}

const byStart = (a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt) || (a.id < b.id ? -1 : 1);

/** The spans by parent; spans whose parent is unknown are roots. */
function treeOf(spans) {
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    if (span.parentId && state.spans.has(span.parentId)) {
      if (!children.has(span.parentId)) children.set(span.parentId, []);
      children.get(span.parentId).push(span);
    } else roots.push(span);
  }
  return { children, roots };
}

/** The shared time axis: from the first span's start to the trace's last moment (now, while it runs). */
function axisOf(spans) {
  let start = Infinity;
  for (const span of spans) start = Math.min(start, Date.parse(span.startedAt));
  if (!Number.isFinite(start)) start = serverNow();
  const end = Math.max(start + 1, state.ended ? state.lastMoment : Math.max(serverNow(), state.lastMoment));
  return { start, end, at: (time) => (100 * (time - start)) / (end - start) };
}

/** A span's model usage with everything below it: a model call's own, the sum of its model calls for any other span. */
function usageOf(span, tree, memo) {
  if (span.kind === "MODEL_CALL") return span.usage || ZERO_USAGE;
  if (memo.has(span.id)) return memo.get(span.id);
  const total = (tree.children.get(span.id) || []).reduce((sum, child) => addUsage(sum, usageOf(child, tree, memo)), ZERO_USAGE);
  memo.set(span.id, total);
  return total;
}

/**
 * What a span shows below its row: its child spans and its events, by time. On the same
 * millisecond, events that prepare the children (a budget) come before them and the others (an
 * answer, an error) after. Consecutive thinking deltas read as one row.
 */
function itemsOf(span, tree) {
  const items = (tree.children.get(span.id) || []).map((child) => ({ at: Date.parse(child.startedAt), span: child }));
  let thinking = null;
  for (const event of span.events) {
    if (event.kind === "THINKING" && thinking) {
      thinking.events.push(event);
      continue;
    }
    const item = { at: Date.parse(event.at), events: [event], rank: BEFORE_CHILDREN.includes(event.kind) ? 0 : 2 };
    thinking = event.kind === "THINKING" ? item : null;
    items.push(item);
  }
  return items.sort((a, b) => a.at - b.at || (a.span ? 1 : a.rank) - (b.span ? 1 : b.rank));
}

function select(spanId, eventId) {
  state.selected = spanId;
  state.focusEvent = eventId || null;
  scheduleRender();
}

function toggle(spanId) {
  if (state.collapsed.has(spanId)) state.collapsed.delete(spanId);
  else state.collapsed.add(spanId);
  scheduleRender();
}

const attemptOfSpan = (spanId) => ((state.run && state.run.attempts) || []).find((a) => a.span && a.span.id === spanId);

/** The few words next to a span's name saying why it did not end well, if it did not. */
function noteOf(span) {
  const attempt = span.kind === "ATTEMPT" ? attemptOfSpan(span.id) : null;
  if (attempt && interruptedText(attempt)) return { tone: "warn", text: interruptedText(attempt) };
  if (span.kind === "RUN" && state.run && state.run.failureReason) return { tone: "bad", text: state.run.failureReason };
  return null;
}

function statusChip(status) {
  const chip = el("span", "status " + status, status === "OK" ? "ok" : status.toLowerCase());
  chip.dataset.testid = "status";
  return chip;
}

/** A span's cost with everything below it: a model call's own, the sum of its model calls' for any other span (and its own, past a trace's bound). */
function costOf(span, tree, memo) {
  const key = span.id + " cost";
  if (memo.has(key)) return memo.get(key);
  const total = (tree.children.get(span.id) || []).reduce((sum, child) => addCost(sum, costOf(child, tree, memo)), ownCost(span));
  memo.set(key, total);
  return total;
}

function tokensCell(usage, below, cost) {
  const cell = el("div", "tok" + (below ? " below" : ""));
  if (!hasUsage(usage) && !hasCost(cost)) return cell;
  // The token counts in an element of their own, the cost (if any) beside them.
  const counts = el("span", "counts", int(usage.input) + " / " + int(usage.output) + " / " + int(usage.cached) + " / " + int(usage.reasoning));
  counts.dataset.testid = "tokens";
  cell.append(counts);
  cell.title = (below ? "Model calls below: " : "") + usageText(usage);
  if (hasCost(cost)) {
    const priced = el("span", "cost" + (cost.unpriced ? " unpriced" : ""), " · " + costText(cost));
    priced.dataset.testid = "span-cost";
    cell.append(priced);
    cell.title += " · cost " + costText(cost);
  }
  return cell;
}

function laneOf(span, ctx) {
  const lane = el("div", "lane");
  const start = Date.parse(span.startedAt);
  const bar = el("div", "bar " + span.kind + " " + span.status);
  bar.dataset.testid = "bar";
  bar.style.left = ctx.axis.at(start) + "%";
  bar.style.width = Math.max(0, ctx.axis.at(endOf(span)) - ctx.axis.at(start)) + "%";
  bar.title = span.name + ": " + durationText(span) + ", from +" + formatMs(start - ctx.axis.start);
  lane.append(bar);
  return lane;
}

function spanRow(span, depth, expandable, ctx) {
  const collapsed = state.collapsed.has(span.id);
  const row = el("div", "row span-row" + (state.selected === span.id ? " selected" : ""));
  row.tabIndex = 0;
  row.setAttribute("role", "treeitem");
  row.dataset.testid = "span-row";
  const label = el("div", "label");
  label.style.paddingLeft = depth * 16 + "px";
  if (expandable) {
    const button = el("button", "toggle", collapsed ? "▸" : "▾");
    button.dataset.testid = "toggle";
    button.setAttribute("aria-label", (collapsed ? "Expand " : "Collapse ") + span.name);
    row.setAttribute("aria-expanded", String(!collapsed));
    button.onclick = (event) => {
      event.stopPropagation();
      toggle(span.id);
    };
    label.append(button);
  } else label.append(el("span", "toggle"));
  label.append(el("span", "kind " + span.kind, KIND_LABEL[span.kind] || span.kind), el("span", "name", span.name), statusChip(span.status));
  const note = noteOf(span);
  if (note) label.append(el("span", "note " + note.tone, note.text));
  const own = span.kind === "MODEL_CALL";
  row.append(label, el("div", "dur", durationText(span)), tokensCell(usageOf(span, ctx.tree, ctx.memo), !own, costOf(span, ctx.tree, ctx.memo)), laneOf(span, ctx));
  row.onclick = () => select(span.id);
  row.onkeydown = (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(span.id);
    } else if ((event.key === "ArrowLeft" && !collapsed) || (event.key === "ArrowRight" && collapsed)) {
      if (expandable) toggle(span.id);
    }
  };
  return row;
}

/** An event's row: its kind and a one-line preview (a budget as its gauge), and a mark on the time axis. */
function eventRow(span, events, depth, ctx) {
  const first = events[0];
  // An error of a span that an interruption stopped is the interruption's doing, not a failure.
  const aborted = first.kind === "ERROR" && span.status === "INTERRUPTED";
  const row = el("div", "row event-row " + first.kind + (aborted ? " aborted" : ""));
  row.dataset.testid = "event";
  row.dataset.kind = first.kind;
  row.dataset.eventId = first.id;
  row.dataset.count = String(events.length);
  const label = el("div", "label");
  label.style.paddingLeft = depth * 16 + 18 + "px";
  label.append(el("span", "ekind", aborted ? "aborted" : eventLabel(first)));
  const budget = first.kind === "BUDGET" ? budgetOf(first.preview) : null;
  if (budget) label.append(budgetGauge(budget, true));
  else {
    const text = events.map((e) => e.preview).join(first.kind === "THINKING" ? "" : " ");
    // A tool call's input keeps every hidden character, shown as its escape (U+FEFF and U+2028 are white space to oneLine),
    // and its spaces as they are: only tabs and line breaks become spaces, one for one.
    label.append(CALL_EVENTS.has(first.kind) ? visibleEl("span", "preview", text.replace(/[\\t\\n\\r]/g, " ")) : el("span", "preview", oneLine(text)));
  }
  const lane = el("div", "lane");
  const mark = el("i", "tick");
  mark.style.left = ctx.axis.at(Date.parse(first.at)) + "%";
  lane.append(mark);
  row.title = eventLabel(first) + " at +" + formatMs(Date.parse(first.at) - ctx.axis.start) + " · " + int(first.size) + " bytes";
  row.append(label, lane);
  row.onclick = () => select(span.id, first.id);
  return row;
}

function spanNode(span, depth, ctx) {
  const box = el("div", "span");
  box.dataset.testid = "span";
  box.dataset.spanId = span.id;
  box.dataset.kind = span.kind;
  box.dataset.status = span.status;
  const items = itemsOf(span, ctx.tree);
  box.append(spanRow(span, depth, items.length > 0, ctx));
  const output = liveOutputRow(span, depth + 1);
  if (output) box.append(output);
  if (items.length > 0 && !state.collapsed.has(span.id)) {
    const list = el("div", "children");
    list.setAttribute("role", "group");
    for (const item of items) list.append(item.span ? spanNode(item.span, depth + 1, ctx) : eventRow(span, item.events, depth + 1, ctx));
    box.append(list);
  } else if (items.length > 0) box.dataset.collapsed = "true";
  return box;
}

function axisRow(axis) {
  const row = el("div", "row axis");
  row.append(el("div", "label", "span"), el("div", "dur", "duration"), el("div", "tok", "tokens in / out / cached / reasoning · cost"));
  const lane = el("div", "lane");
  for (const share of [0, 0.25, 0.5, 0.75, 1]) {
    const tick = el("span", "tick-label" + (share === 0 ? " first" : share === 1 ? " last" : ""), formatMs(share * (axis.end - axis.start)));
    tick.style.left = share * 100 + "%";
    lane.append(tick);
  }
  row.append(lane);
  return row;
}

/** Draws the tree; returns what the rest of the page reads from it. */
function renderTree() {
  const spans = [...state.spans.values()].sort(byStart);
  const tree = treeOf(spans);
  const ctx = { tree, axis: axisOf(spans), memo: new Map() };
  $("tree").replaceChildren(axisRow(ctx.axis), ...tree.roots.map((root) => spanNode(root, 0, ctx)));
  return { spans, ctx };
}
`;
