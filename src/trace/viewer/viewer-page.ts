// The trace viewer page itself (trace-viewer.ts serves it): its markup, with the style and the
// browser script inline, each allowed to run by the response's nonce alone.
import { DATA_SCRIPT } from "./viewer-data-script.js";
import { RENDER_SCRIPT } from "./viewer-render-script.js";
import { SOCKET_SCRIPT } from "./viewer-socket-script.js";
import { STYLE } from "./viewer-style.js";

/** The page's script: its parts in order, in one scope. */
const SCRIPT = DATA_SCRIPT + SOCKET_SCRIPT + RENDER_SCRIPT;

export function traceViewerPage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dossier trace</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<header>
  <h1>Run <code id="run-id"></code></h1>
  <div class="facts">
    <span>status <b id="run-status" data-testid="run-status">…</b></span>
    <span>connection <b id="connection" data-testid="connection">connecting</b></span>
    <span>seq <b id="last-seq" data-testid="last-seq">0</b></span>
    <span>tokens <b id="usage" data-testid="usage">in 0 · out 0</b></span>
    <span>spans <b id="span-count" data-testid="span-count">0</b></span>
  </div>
  <p id="question"></p>
  <p id="message" data-testid="message" hidden></p>
  <form id="key-form" hidden><label>API key <input id="key-input" type="password" autocomplete="off"></label> <button>Open</button></form>
</header>
<main id="tree" data-testid="tree"></main>
<section id="answer-box" hidden><h2>Answer</h2><pre id="answer" data-testid="answer"></pre></section>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>
`;
}
