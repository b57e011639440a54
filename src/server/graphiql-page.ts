// GraphiQL's page, built from the installed @graphql-yoga/render-graphiql: its script, style,
// fonts and editor workers are inlined into the one HTML response, so the page asks nothing of
// any other host and works offline (Yoga's own page loads them from a CDN).
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { GraphiQLOptions } from "graphql-yoga";
import { DOSSIER_ICON_DATA_URL } from "./favicon.js";
import { FRAMES_SCRIPT } from "./graphiql-frames.js";

type Assets = Pick<typeof import("@graphql-yoga/render-graphiql/graphiql"), "css" | "js" | "editorWorkerService" | "jsonWorker" | "graphqlWorker">;

let rendered: { options: string; page: Promise<Uint8Array<ArrayBuffer>> } | undefined;

/**
 * Yoga's `renderGraphiQL`. The page is rendered once, to bytes (the options are fixed at start),
 * on the first request for it: a server nobody opens GraphiQL on never reads the package.
 */
export function renderOfflineGraphiQL(options: GraphiQLOptions): Promise<Uint8Array<ArrayBuffer>> {
  const key = JSON.stringify(options);
  if (rendered?.options !== key) rendered = { options: key, page: loadAssets().then((assets) => new TextEncoder().encode(graphiqlPage(assets, options))) };
  const current = rendered;
  // A failed load is not kept: the next request tries again.
  current.page.catch(() => {
    if (rendered === current) rendered = undefined;
  });
  return current.page;
}

/**
 * The package's assets, read by a worker thread that exits once it has sent them. Imported here,
 * the package's module, its source and its strings would stay in memory for the life of the
 * process (an ES module is never unloaded); this way only the page's bytes are kept.
 */
function loadAssets(): Promise<Assets> {
  const modulePath = createRequire(import.meta.url).resolve("@graphql-yoga/render-graphiql/graphiql");
  const source = `const { parentPort, workerData } = require("node:worker_threads");
const { css, js, editorWorkerService, jsonWorker, graphqlWorker } = require(workerData);
parentPort.postMessage({ css, js, editorWorkerService, jsonWorker, graphqlWorker });`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: modulePath });
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`GraphiQL's assets were not read: the worker exited with code ${code}`)));
  });
}

/** Where GraphiQL keeps what a browser has open, for this set of example tabs (see PAGE_SCRIPT). */
export function graphiqlStateVersion(options: GraphiQLOptions): string {
  const examples = JSON.stringify([options.defaultTabs ?? null, options.defaultQuery ?? null]);
  return createHash("sha256").update(examples).digest("hex").slice(0, 12);
}

function graphiqlPage(assets: Assets, options: GraphiQLOptions): string {
  const title = escapeHtml(options.title ?? "GraphiQL");
  const data = {
    options,
    stateVersion: graphiqlStateVersion(options),
    workers: { editorWorkerService: assets.editorWorkerService, json: assets.jsonWorker, graphql: assets.graphqlWorker },
  };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${title}</title>
<link rel="icon" href="${DOSSIER_ICON_DATA_URL}">
<style>${assets.css}</style>
</head>
<body id="body" class="no-focus-outline">
<noscript>GraphiQL needs JavaScript.</noscript>
<div id="root"></div>
<script>${FRAMES_SCRIPT}</script>
<script>${assets.js}</script>
<script>const DOSSIER_GRAPHIQL = ${scriptJson(data)};
${PAGE_SCRIPT}</script>
</body>
</html>`;
}

// Runs in the browser, after GraphiQL's own script.
// - Monaco starts its workers from the inlined sources, as blob: URLs.
// - GraphiQL keeps the open tabs and the last query and variables in localStorage, and prefers
//   them to the configured tabs. They are kept under a name of their own per set of examples, so
//   a browser that opened an older Dossier (or another GraphiQL on this origin) opens with this
//   version's examples; history, favourites and settings stay shared.
// - Headers (an authorization header with an API key) are never kept: not the headers editor's,
//   not a tab's, and no setting turns that on. What an older page kept is removed when it opens,
//   as the trace viewer forgets the key its older versions kept.
// - Subscriptions run over graphql-ws, which sends no HTTP headers: the headers editor's content
//   (e.g. an authorization header with an API key) goes as the connection's parameters instead,
//   read when the socket opens with the first subscription, with the page's additional headers
//   (GraphiQL sends those with every HTTP request), so the server recognises GraphiQL either way.
// - GraphiQL's tabs can be dragged within the tab bar. Rendered before its fonts are loaded, the
//   tabs change width when the fonts arrive, and the drag code, placing each tab again within the
//   resized bar, offsets every tab but the last by the width of the tabs after it. GraphiQL's
//   style hides the offset until a tab has focus: pressed, a tab jumps away from the pointer and
//   the click is lost (it opens on a second click). With the fonts loaded first, nothing resizes.
const PAGE_SCRIPT = `
const workerUrls = {};
for (const [label, source] of Object.entries(DOSSIER_GRAPHIQL.workers)) {
  workerUrls[label] = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
}
self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workerUrls[label] };

const VERSIONED = new Set(["graphiql:tabState", "graphiql:query", "graphiql:variables"]);
const storedAs = (key) => (VERSIONED.has(key) ? key + "@dossier-" + DOSSIER_GRAPHIQL.stateVersion : key);
const UNKEPT = (key) => key.startsWith("graphiql:headers") || key === "graphiql:shouldPersistHeaders";
const withoutHeaders = (value) => {
  try {
    return JSON.stringify(JSON.parse(value), (key, kept) => (key === "headers" ? null : kept));
  } catch {
    return value;
  }
};
try {
  for (const key of Object.keys(localStorage)) {
    if (UNKEPT(key)) localStorage.removeItem(key);
    else if (key.startsWith("graphiql:tabState")) localStorage.setItem(key, withoutHeaders(localStorage.getItem(key)));
  }
} catch {
  // Storage refused: nothing was kept there.
}
const storage = {
  getItem: (key) => (UNKEPT(key) ? null : localStorage.getItem(storedAs(key))),
  setItem: (key, value) => {
    if (!UNKEPT(key)) localStorage.setItem(storedAs(key), key === "graphiql:tabState" ? withoutHeaders(value) : value);
  },
  removeItem: (key) => localStorage.removeItem(storedAs(key)),
  get length() { return Object.keys(localStorage).filter((key) => key.startsWith("graphiql:")).length; },
  clear() { for (const key of Object.keys(localStorage)) if (key.startsWith("graphiql:")) localStorage.removeItem(key); },
};

let headers = "";
const connectionParams = () => {
  try {
    const parsed = JSON.parse(headers || "{}");
    return { headers: { ...(parsed && typeof parsed === "object" ? parsed : {}), ...DOSSIER_GRAPHIQL.options.additionalHeaders } };
  } catch {
    return { headers: { ...DOSSIER_GRAPHIQL.options.additionalHeaders } };
  }
};

Promise.all([...document.fonts].map((face) => face.load()))
  .catch(() => undefined)
  .then(() => {
    YogaGraphiQL.renderYogaGraphiQL(document.getElementById("root"), {
      ...DOSSIER_GRAPHIQL.options,
      shouldPersistHeaders: false,
      showPersistHeadersSettings: false,
      storage,
      connectionParams,
      onEditHeaders: (value) => { headers = value; },
    });
  });
`;

/** JSON inside a <script>: no "<" may close the element early. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
