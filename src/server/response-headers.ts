// What every response the GraphQL server answers says to browsers and caches on its way:
// - Cache-Control: no-store. A GraphQL answer is one principal's data, and GraphiQL's page carries
//   this process's own secret header value (server/graphiql.ts): neither may be kept by a shared
//   cache, nor by the browser's. Only a response that says it is the same for everyone
//   (`public`: the icon) keeps its own; an SSE stream's `no-cache` becomes `no-store`.
// - Vary: Origin. Whether a response carries CORS headers depends on the page's origin
//   (server/cross-site.ts: a listed one is named back, any other gets none), so a cache must not
//   hand one origin's answer to another.
// - X-Content-Type-Options: nosniff. A browser takes each response for its declared type only: a
//   JSON answer that echoes what a request sent is never run as a script or shown as a page.
import type { Plugin } from "graphql-yoga";

export function privateResponses(): Plugin {
  return {
    onResponse({ response }) {
      const { headers } = response;
      if (!/\bpublic\b/i.test(headers.get("cache-control") ?? "")) {
        // Deleted first: a header the response was made with under another spelling ("Cache-Control")
        // would otherwise be sent beside the one set here.
        headers.delete("cache-control");
        headers.set("cache-control", "no-store");
      }
      const vary = headers.get("vary");
      if (vary === null || vary.trim() === "") headers.set("vary", "Origin");
      else if (vary.trim() !== "*" && !vary.split(",").some((name) => name.trim().toLowerCase() === "origin")) headers.set("vary", `${vary}, Origin`);
      headers.set("x-content-type-options", "nosniff");
    },
  };
}
