// Prometheus metrics over HTTP (S4): GET /metrics, timings of every HTTP request and GraphQL
// operation, and the SSE subscriptions open (graphql-ws subscriptions are counted by the HTTP
// server, which sees every socket).
import { getOperationAST } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { DossierMetrics } from "../metrics/dossier-metrics.js";
import { createHash, timingSafeEqual } from "node:crypto";

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * Whether a scrape may read the metrics: always without a METRICS_TOKEN, else only with
 * `Authorization: Bearer <token>` (compared in constant time). The metrics count every tenant's runs.
 */
export function scrapeAllowed(authorization: string | null | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  return timingSafeEqual(digest(authorization ?? ""), digest(`Bearer ${token}`));
}

const ROUTES = new Set(["/graphql", "/health", "/ready", "/metrics"]);

export function metricsPlugin({ metrics, endpoint = "/metrics", token }: { metrics: DossierMetrics; endpoint?: string; token?: string }): Plugin {
  // When each request started and its path (Yoga has parsed its URL once already).
  const started = new WeakMap<Request, { at: number; path: string }>();
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      started.set(request, { at: performance.now(), path: url.pathname });
      if (url.pathname !== endpoint) return;
      if (request.method !== "GET") {
        endResponse(new fetchAPI.Response("Method Not Allowed", { status: 405, headers: { allow: "GET" } }));
        return;
      }
      if (!scrapeAllowed(request.headers.get("authorization"), token)) {
        endResponse(
          new fetchAPI.Response("Unauthorized: send Authorization: Bearer <METRICS_TOKEN>", { status: 401, headers: { "www-authenticate": "Bearer" } }),
        );
        return;
      }
      const body = await metrics.render();
      endResponse(new fetchAPI.Response(body, { headers: { "content-type": metrics.contentType } }));
    },
    onResponse({ request, response }) {
      const start = started.get(request);
      if (start === undefined) return;
      metrics.observeRequest(
        { method: request.method, route: ROUTES.has(start.path) ? start.path : "other", status: String(response.status) },
        (performance.now() - start.at) / 1000,
      );
    },
    onExecute({ args }) {
      const start = performance.now();
      const type = getOperationAST(args.document, args.operationName)?.operation ?? "unknown";
      return {
        onExecuteDone({ result }) {
          const outcome = "errors" in result && result.errors?.length ? "error" : "ok";
          metrics.observeOperation({ outcome, type }, (performance.now() - start) / 1000);
        },
      };
    },
    onSubscribe({ args }) {
      // graphql-ws subscriptions carry their socket in the context; the HTTP server counts those.
      if ("socket" in (args.contextValue as object)) return;
      const start = performance.now();
      return {
        onSubscribeResult({ result }) {
          if (!(Symbol.asyncIterator in result)) return;
          metrics.observeOperation({ outcome: "ok", type: "subscription" }, (performance.now() - start) / 1000);
          metrics.countSseSubscriptions(1);
          let ended = false;
          return {
            onEnd() {
              if (ended) return;
              ended = true;
              metrics.countSseSubscriptions(-1);
            },
          };
        },
      };
    },
  };
}
