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

/** A length past ms with room to spare: the next of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten. */
function roomy(ms) {
  const power = 10 ** Math.floor(Math.log10(Math.max(1, ms)));
  return [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].map((step) => step * power).find((length) => length >= ms);
}

/**
 * The shared time axis: from the first span's start to the trace's last moment once it ended.
 * While it runs the axis reaches a little past now (roomy), so running spans grow on an axis that
 * changes only now and then, not on every tick with every bar on it.
 */
function axisOf(spans) {
  let start = Infinity;
  for (const span of spans) start = Math.min(start, Date.parse(span.startedAt));
  if (!Number.isFinite(start)) start = serverNow();
  const end = state.ended ? Math.max(start + 1, state.lastMoment) : start + roomy(Math.max(serverNow(), state.lastMoment) - start);
  return { start, end };
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

/** A span row's bar: placed on the time axis by CSS from its offset and duration in ms (--s, --d) and the axis's length (--axis on the tree). */
function laneOf(span, ctx) {
  const lane = el("div", "lane");
  const bar = el("div", "bar " + span.kind + " " + span.status);
  bar.dataset.testid = "bar";
  bar.style.setProperty("--s", String(Date.parse(span.startedAt) - ctx.axis.start));
  lane.append(bar);
  return lane;
}

/** What of a span's row changes with time alone: its bar's length and its duration. Updated in place, and only when changed. */
function spanTimes(node, span, ctx) {
  const start = Date.parse(span.startedAt);
  setStyle(node.bar, "--d", String(durationMs(span)));
  setAttr(node.bar, "title", span.name + ": " + durationText(span) + ", from +" + formatMs(start - ctx.axis.start));
  setText(node.dur, durationText(span));
}

function spanRow(span, depth, expandable, ctx, usage, cost) {
  const collapsed = state.collapsed.has(span.id);
  const row = el("div", "row span-row");
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
  row.append(label, el("div", "dur"), tokensCell(usage, !own, cost), laneOf(span, ctx));
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
  else if (first.kind === "TOOL_INPUT") {
    // A tool call's input reads as the tool gets it (\\u0072\\u006d reads rm, a long run of blanks as its count), every
    // hidden character shown as its escape; a held call's from its whole arguments, with a ⚠ whose title gives the server's warnings.
    const held = heldCallOf(span);
    const warnings = held ? held.readableArguments.warnings : [];
    if (warnings.length > 0) {
      const flag = el("b", "args-flag", "⚠");
      flag.title = warnings.join("\\n");
      flag.dataset.testid = "arguments-warning";
      label.append(flag);
    }
    label.append(argumentsEl("span", "preview", held ? held.arguments : events.map((e) => e.preview).join(" "), true));
  } else {
    const text = events.map((e) => e.preview).join(first.kind === "THINKING" ? "" : " ");
    // A held call's request and decision keep every hidden character, shown as its escape (U+FEFF and U+2028 are white space to oneLine),
    // and their spaces as they are: only tabs and line breaks become spaces, one for one.
    label.append(CALL_EVENTS.has(first.kind) ? visibleEl("span", "preview", text.replace(/[\\t\\n\\r]/g, " ")) : el("span", "preview", oneLine(text)));
  }
  const lane = el("div", "lane");
  const mark = el("i", "tick");
  mark.style.setProperty("--s", String(Date.parse(first.at) - ctx.axis.start));
  lane.append(mark);
  row.title = eventLabel(first) + " at +" + formatMs(Date.parse(first.at) - ctx.axis.start) + " · " + int(first.size) + " bytes";
  row.append(label, lane);
  row.onclick = () => select(span.id, first.id);
  return row;
}
`;
