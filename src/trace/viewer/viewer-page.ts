// The trace viewer page itself (trace-viewer.ts serves it): its markup, with the style and the
// browser script inline, each allowed to run by the response's nonce alone. Nothing is fetched
// from elsewhere, the icon included (a data: URL), so the page works offline.
import { ACTIONS_SCRIPT } from "./viewer-actions-script.js";
import { DATA_SCRIPT } from "./viewer-data-script.js";
import { FORMAT_SCRIPT } from "./viewer-format-script.js";
import { OUTPUT_SCRIPT } from "./viewer-output-script.js";
import { PANEL_SCRIPT } from "./viewer-panel-script.js";
import { RENDER_SCRIPT } from "./viewer-render-script.js";
import { SOCKET_SCRIPT } from "./viewer-socket-script.js";
import { STYLE } from "./viewer-style.js";
import { TREE_SCRIPT } from "./viewer-tree-script.js";
import { TREE_VIEW_SCRIPT } from "./viewer-tree-view-script.js";

/** The page's script: its parts in order, in one scope. */
const SCRIPT = DATA_SCRIPT + FORMAT_SCRIPT + SOCKET_SCRIPT + OUTPUT_SCRIPT + TREE_SCRIPT + TREE_VIEW_SCRIPT + PANEL_SCRIPT + ACTIONS_SCRIPT + RENDER_SCRIPT;

/** Three bars of a waterfall, as the tab's icon: not Dossier's own (server/favicon.ts), so a trace's tab is told from GraphiQL's at a glance. */
const ICON =
  "data:image/svg+xml," +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f3a68"/>' +
      '<rect x="2" y="3" width="12" height="2.4" rx="1" fill="#9cc3ff"/><rect x="4" y="6.8" width="6" height="2.4" rx="1" fill="#7fd6a4"/>' +
      '<rect x="8" y="10.6" width="6" height="2.4" rx="1" fill="#ffc46b"/></svg>',
  );

export function traceViewerPage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dossier trace</title>
<link rel="icon" href="${ICON}">
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<header>
  <div class="title">
    <span class="brand">Dossier trace</span>
    <b id="run-status" class="badge" data-testid="run-status">…</b>
    <code id="run-id" title="run id"></code>
    <select id="stop-mode" data-testid="stop-mode" title="how Stop stops the run" hidden>
      <option value="NOW">now, keeping the text so far</option>
      <option value="AFTER_TURN">after this turn</option>
      <option value="CONCLUDE">answer from what it has</option>
    </select>
    <button id="pause" class="pause" data-testid="pause" hidden>Pause</button>
    <button id="stop" class="stop" data-testid="stop" hidden>Stop</button>
    <span id="stop-request" class="badge" data-testid="stop-request" hidden></span>
  </div>
  <p id="question" data-testid="question"></p>
  <div class="facts">
    <span>duration <b id="run-duration" data-testid="run-duration">–</b></span>
    <span>tokens <b id="usage" data-testid="usage">in 0 · out 0 · cached 0 · reasoning 0</b></span>
    <span>cost <b id="cost" data-testid="cost">$0</b></span>
    <span>spans <b id="span-count" data-testid="span-count">0</b></span>
    <span>model <b id="model" data-testid="model">–</b></span>
    <span>seq <b id="last-seq" data-testid="last-seq">0</b></span>
    <span><i class="dot"></i><b id="connection" data-testid="connection">connecting</b></span>
  </div>
  <div id="failure" class="banner bad" data-testid="failure" role="alert" hidden></div>
  <div id="truncated" class="banner warn" data-testid="truncated" hidden></div>
  <div id="interruptions" class="banner warn" data-testid="interruptions" hidden></div>
  <div id="expired" class="banner warn" data-testid="trace-expired" hidden></div>
  <div id="waiting" class="banner wait" data-testid="waiting" hidden></div>
  <p id="message" data-testid="message" hidden></p>
  <form id="key-form" data-testid="key-form" hidden><label>API key or access token <input id="key-input" type="password" autocomplete="off"></label> <button>Open</button></form>
</header>
<main>
  <section class="trace">
    <div id="tree" data-testid="tree" role="tree" aria-label="Spans and events"></div>
    <section id="answer-box" hidden><h2>Answer</h2><pre id="answer" data-testid="answer"></pre></section>
  </section>
  <aside id="panel" data-testid="panel" aria-label="Details of the selected span"></aside>
</main>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>
`;
}
