// The trace viewer's browser script, last part: rendering the state as the span tree, at most
// once a frame, and starting the page.
export const RENDER_SCRIPT = `
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
