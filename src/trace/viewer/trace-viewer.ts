// The live trace viewer at GET /traces/<runId>: one self-contained page (no build step) that
// reads the run's trace over HTTP and then follows `traceUpdates` over graphql-ws, resuming
// with afterSeq after a dropped connection. The page holds no data of its own: it asks the API
// with the viewer's API key or access token (from the URL fragment `#key=…` or `#token=…` — a later
// change taken at once when framed, offered in its form when not — or typed into that form; kept
// in the page's memory only), so
// it is authorised exactly like any other client. Pages on VIEWER_FRAME_ANCESTORS may frame it.
import { randomBytes } from "node:crypto";
import type { Plugin } from "graphql-yoga";
import { traceViewerPage } from "./viewer-page.js";

// Run ids are base64 and may contain "/": everything after /traces/ is the id.
const PATH = /^\/traces\/.+$/;

/** A Yoga plugin answering GET /traces/<runId> with the viewer page; only `frameAncestors` (origins) may frame it. */
export function useTraceViewer({ frameAncestors = [] }: { frameAncestors?: readonly string[] } = {}): Plugin {
  const ancestors = frameAncestors.length > 0 ? frameAncestors.join(" ") : "'none'";
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
            // Only this page's own script runs; it talks to this server only, and only listed origins may frame it.
            "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors ${ancestors}`,
            "referrer-policy": "no-referrer",
            // A page of another origin that opens the viewer gets no handle on its window, so it cannot load it
            // again with a #key= of its choosing (a fresh load takes the fragment at once). Frames are not affected.
            "cross-origin-opener-policy": "same-origin",
          },
        }),
      );
    },
  };
}
