// Dossier's icon, for the pages it serves: GraphiQL links it inline, and GET /favicon.ico answers
// it for pages that link none (a browser asks for /favicon.ico by itself, and a 404 shows as a
// failed request in its console).
import type { Plugin } from "graphql-yoga";

/** A folder with a "D": small enough to inline in every page. */
export const DOSSIER_ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
  '<rect x="2" y="4" width="28" height="24" rx="4" fill="#1d4f91"/>' +
  '<path d="M11 10h5a6 6 0 0 1 0 12h-5z" fill="none" stroke="#fff" stroke-width="3"/>' +
  "</svg>";

/** The icon as a data: URL, for a page's `<link rel="icon">`: no request at all. */
export const DOSSIER_ICON_DATA_URL = `data:image/svg+xml,${encodeURIComponent(DOSSIER_ICON_SVG)}`;

/** A Yoga plugin answering GET /favicon.ico with the icon. */
export function useFavicon(): Plugin {
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== "/favicon.ico" || (request.method !== "GET" && request.method !== "HEAD")) return;
      endResponse(
        new fetchAPI.Response(request.method === "HEAD" ? null : DOSSIER_ICON_SVG, {
          status: 200,
          headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" },
        }),
      );
    },
  };
}
