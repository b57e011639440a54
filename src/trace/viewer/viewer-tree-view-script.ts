// The trace viewer's browser script, the tree kept across renders: each span's element (its row,
// its children's list) is kept by span id and each event row by its first event's id. A render
// makes a row anew only when what it shows changed, updates running spans' bars and durations in
// place (the bars are placed by CSS on the axis's length, one property of the tree), and inserts
// or removes only the elements that came or went. A tick of a big running trace so changes the
// running spans' rows alone, a click the clicked row, a record the rows of the spans it touches;
// the rest of the tree stays as it is, with a reader's focus in it.
export const TREE_VIEW_SCRIPT = `
// ---- the tree, kept across renders -------------------------------------------------------------
/** The tree's kept elements, for the state shown: by span id, { box, row, key, bar, dur, list, events }. */
let treeView = null;
function viewOf() {
  if (!treeView || treeView.state !== state) treeView = { state, nodes: new Map(), axis: null };
  return treeView;
}

/** Makes parent's children exactly wanted, in order, moving or removing only what is not already in place. */
function place(parent, wanted) {
  const keep = new Set(wanted);
  for (let child = parent.firstChild; child; ) {
    const next = child.nextSibling;
    if (!keep.has(child)) child.remove();
    child = next;
  }
  let cursor = parent.firstChild;
  for (const child of wanted) {
    if (child === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(child, cursor);
  }
}

/** Everything a span's row shows but its times: when it changes, the row is made anew. */
function rowKey(span, depth, expandable, usage, cost, ctx) {
  const note = noteOf(span);
  return JSON.stringify([span.kind, span.name, span.status, span.endedAt || (state.ended ? "ended" : ""), depth, expandable, state.collapsed.has(span.id),
    note, usage, String(cost.units), cost.unpriced, ctx.axis.start]);
}

function spanNode(span, depth, ctx) {
  let node = ctx.view.nodes.get(span.id);
  if (!node) {
    const box = el("div", "span");
    box.dataset.testid = "span";
    box.dataset.spanId = span.id;
    node = { box, row: null, key: null, bar: null, dur: null, list: null, events: new Map() };
    ctx.view.nodes.set(span.id, node);
  }
  const box = node.box;
  setData(box, "kind", span.kind);
  setData(box, "status", span.status);
  const items = itemsOf(span, ctx.tree);
  const expandable = items.length > 0;
  const open = expandable && !state.collapsed.has(span.id);
  const usage = usageOf(span, ctx.tree, ctx.memo);
  const cost = costOf(span, ctx.tree, ctx.memo);
  const key = rowKey(span, depth, expandable, usage, cost, ctx);
  let refocus = false;
  if (node.key !== key) {
    refocus = Boolean(node.row) && node.row === document.activeElement;
    node.row = spanRow(span, depth, expandable, ctx, usage, cost);
    node.key = key;
    node.bar = node.row.querySelector("[data-testid=bar]");
    node.dur = node.row.querySelector(".dur");
    spanTimes(node, span, ctx);
  } else if (!span.endedAt) spanTimes(node, span, ctx);
  node.row.classList.toggle("selected", state.selected === span.id);
  if (expandable && !open) setData(box, "collapsed", "true");
  else delete box.dataset.collapsed;
  let list = null;
  if (open) {
    if (!node.list) {
      node.list = el("div", "children");
      node.list.setAttribute("role", "group");
    }
    list = node.list;
    const events = new Map();
    place(list, items.map((item) => (item.span ? spanNode(item.span, depth + 1, ctx) : eventNode(node, events, span, item.events, depth + 1, ctx))));
    node.events = events;
  }
  const output = liveOutputRow(span, depth + 1);
  place(box, [node.row, ...(output ? [output] : []), ...(list ? [list] : [])]);
  if (refocus) node.row.focus();
  return box;
}

/** An event row, kept while its events, depth and the axis's start are the same. */
function eventNode(node, events, span, group, depth, ctx) {
  const first = group[0];
  // A call's input is drawn again when the call comes to wait, or stops waiting (heldCallOf).
  const held = first.kind === "TOOL_INPUT" ? heldCallOf(span) : null;
  const key = [group.length, first.kind === "ERROR" && span.status === "INTERRUPTED", depth, ctx.axis.start, held ? held.id + held.arguments : ""].join("|");
  const known = node.events.get(first.id);
  const entry = known && known.key === key ? known : { key, row: eventRow(span, group, depth, ctx) };
  events.set(first.id, entry);
  return entry.row;
}

const AXIS_SHARES = [0, 0.25, 0.5, 0.75, 1];

/** The axis's header row, made once; its time labels follow the axis. */
function axisRow(view, axis) {
  if (!view.axis) {
    const row = el("div", "row axis");
    row.append(el("div", "label", "span"), el("div", "dur", "duration"), el("div", "tok", "tokens in / out / cached / reasoning · cost"));
    const lane = el("div", "lane");
    const labels = AXIS_SHARES.map((share) => {
      const tick = el("span", "tick-label" + (share === 0 ? " first" : share === 1 ? " last" : ""));
      tick.style.left = share * 100 + "%";
      return tick;
    });
    lane.append(...labels);
    row.append(lane);
    view.axis = { row, labels };
  }
  AXIS_SHARES.forEach((share, i) => setText(view.axis.labels[i], formatMs(share * (axis.end - axis.start))));
  return view.axis.row;
}

/** Draws the tree (what changed of it); returns what the rest of the page reads from it. */
function renderTree() {
  const spans = [...state.spans.values()].sort(byStart);
  const tree = treeOf(spans);
  const view = viewOf();
  const ctx = { tree, axis: axisOf(spans), memo: new Map(), view };
  const box = $("tree");
  setStyle(box, "--axis", String(ctx.axis.end - ctx.axis.start));
  const roots = tree.roots.map((root) => spanNode(root, 0, ctx));
  place(box, [axisRow(view, ctx.axis), ...roots]);
  for (const id of view.nodes.keys()) if (!state.spans.has(id)) view.nodes.delete(id);
  return { spans, ctx };
}
`;
