// The live trace viewer at GET /traces/<runId>: one self-contained page (no build step) that
// reads the run's trace over HTTP and then follows `traceUpdates` over graphql-ws, resuming
// with afterSeq after a dropped connection. The page holds no data of its own: it asks the API
// with the viewer's key (from the URL fragment `#key=…`, kept in localStorage), so it is
// authorised exactly like any other client.
import { randomBytes } from "node:crypto";
import type { Plugin } from "graphql-yoga";
import { SCRIPT, STYLE } from "./trace-viewer-assets.js";

// Run ids are base64 and may contain "/": everything after /traces/ is the id.
const PATH = /^\/traces\/.+$/;

/** A Yoga plugin answering GET /traces/<runId> with the viewer page. */
export function useTraceViewer(): Plugin {
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (!PATH.test(url.pathname)) return;
      if (request.method !== "GET" && request.method !== "HEAD") {
        endResponse(new fetchAPI.Response("Method not allowed", { status: 405, headers: { allow: "GET, HEAD" } }));
        return;
      }
      const nonce = randomBytes(16).toString("base64");
      endResponse(
        new fetchAPI.Response(request.method === "HEAD" ? null : traceViewerPage(nonce), {
          status: 200,
          headers: {
            "content-type": "text/html; charset=utf-8",
            "cache-control": "no-store",
            // Only this page's own script runs; it talks to this server only.
            "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
            "referrer-policy": "no-referrer",
          },
        }),
      );
    },
  };
}

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
