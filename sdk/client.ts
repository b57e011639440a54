// Dossier's thin client: typed operations over HTTP, subscriptions over graphql-ws as async
// iterators. Use it with the typed documents in ./generated/graphql.ts:
//
//   const dossier = createClient({ url: "http://localhost:4000/graphql" });
//   const result = await dossier.request(CreateWorkspaceDocument, { input: { title, goal } });
//   for await (const event of dossier.subscribe(WorkspaceEventsDocument, { workspaceId })) { … }
//
// In trusted-documents mode (`trustedDocuments: true`) each operation is sent as its documentId
// instead of its text, which a server with TRUSTED_DOCUMENTS_ONLY=true requires; `subscriptions:
// "sse"` sends subscriptions over Server-Sent Events instead of one WebSocket.
//
// Lists come a page at a time as Relay connections: `first` items, then the next ones after the
// cursor passed as `after` (the page's `pageInfo.endCursor`), with `totalCount` (exact up to
// 10,000; `countCapped` past it). nodesOf() unwraps a page; readAllPages() follows the pages to
// the end; runTrace() reads a whole trace that way.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws";
import {
  RunAttemptsDocument,
  RunDocument,
  RunOutputDocument,
  type RunOutputSubscription,
  RunTraceDocument,
  type RunTraceQuery,
  SpanEventsDocument,
  TraceSpansDocument,
  TraceUpdatesDocument,
  type TraceUpdatesSubscription,
} from "./generated/graphql.js";
import { type RunOutputSource, type RunOutputUpdate, runOutputText, watchRunUpdates } from "./run-output.js";
import { SharedSocket } from "./shared-socket.js";
import { backoffMs, DossierRequestError, isCloseEvent, operationBody, postOperation, retryAfterMs, subscribeOverSse, subscribeOverWs } from "./transport.js";

export { DossierRequestError, documentIdOf } from "./transport.js";

export { comparePositions, type RunOutputUpdate } from "./run-output.js";

export type ClientOptions = {
  /** The HTTP endpoint, e.g. http://localhost:4000/graphql */
  url: string;
  /** The WebSocket endpoint for subscriptions; defaults to `url` with ws(s):// */
  wsUrl?: string;
  /** Sent with every request and in the WebSocket connection parameters. */
  headers?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  /** A WebSocket implementation where the platform has none (Node.js 20: the `ws` package). */
  webSocketImpl?: unknown;
  /**
   * Send each operation's documentId ("sha256:" + the SHA-256 of its text, as listed in the SDK's
   * persisted-documents.json) instead of its text, over HTTP, SSE and graphql-ws: what a server
   * with TRUSTED_DOCUMENTS_ONLY=true requires. A document of your own must be in a manifest the
   * server loads (TRUSTED_DOCUMENTS_DIR). Default false.
   */
  trustedDocuments?: boolean;
  /** How subscriptions travel: one graphql-ws socket for all (default), or one SSE response each. */
  subscriptions?: "graphql-ws" | "sse";
  /**
   * How long the graphql-ws socket stays open after its last subscription ended, in milliseconds:
   * a subscription started meanwhile (the next run watched, a page's next view) goes out at once
   * on it instead of waiting for a new connection, its upgrade and its acknowledgement, which a
   * server busy with a burst of requests answers last. Default 3000; 0 closes it at once,
   * Infinity keeps it until close(). An idle socket holds a Node.js process open until it closes.
   */
  socketIdleMs?: number;
};

export type DossierClient = {
  request<Result, Variables extends Record<string, unknown>>(
    document: TypedDocumentNode<Result, Variables>,
    ...variables: Record<string, never> extends Variables ? [Variables?] : [Variables]
  ): Promise<Result>;
  subscribe<Result, Variables extends Record<string, unknown>>(
    document: TypedDocumentNode<Result, Variables>,
    ...variables: Record<string, never> extends Variables ? [Variables?] : [Variables]
  ): AsyncIterableIterator<Result>;
  /**
   * A run's trace updates that survive reconnects: after the socket drops (a network blip, a
   * server restart) the stream continues from the last update seen — no gap, no duplicate. It
   * ends after TRACE_ENDED, RESYNC_REQUIRED or TRACE_EXPIRED (the trace expired under its retention policy), or when you stop iterating.
   */
  traceUpdates(runId: string, options?: { afterSeq?: string }): AsyncIterableIterator<TraceUpdate>;
  /**
   * A run with all its attempts, and its trace with every span and every span's events, read a
   * page at a time until a page says it is the last (`pageSize` items a page; by default 100 spans
   * and events and 100 attempts). Null for an id that names no run of yours. The trace's `lastSeq`
   * is read before any span: `traceUpdates(runId, { afterSeq: lastSeq })` then brings whatever
   * changed while the pages were read, so nothing is missed.
   */
  runTrace(runId: string, options?: { pageSize?: number }): Promise<RunTrace | null>;
  /**
   * The text a run's model produces, as it produces it: each model call's text in turn (the
   * answer last), ending when the run settles. It resumes after the socket drops without
   * repeating text; should a model call end while disconnected, the rest of the run's answer is
   * read from the run, and text of earlier calls is in the run's messages. For tool-call
   * arguments and each call's end, subscribe to RunOutputDocument.
   */
  runOutput(runId: string, options?: { afterSeq?: string }): AsyncIterableIterator<string>;
  /**
   * Every update of a run's model output — TEXT_DELTA, TOOL_CALL_DELTA, MESSAGE_DONE, RUN_DONE —
   * each with its position `seq`, ending when the run settles. Store the seq of the last update you
   * rendered (e.g. in sessionStorage) and, after a page reload, call watchRun(runId, { afterSeq })
   * with it: you get exactly the rest, never a repeat (what you missed of a running call comes in
   * one TEXT_DELTA, or several past the server's MAX_RESPONSE_BYTES). Dropped sockets are resumed the same way.
   */
  watchRun(runId: string, options?: { afterSeq?: string }): AsyncIterableIterator<RunOutputUpdate>;
  /** Closes the subscription socket now, if one is open (a later subscription opens another). */
  close(): Promise<void>;
};

export type TraceUpdate = TraceUpdatesSubscription["traceUpdates"];

/** A page of a connection, as the SDK's operations select it. */
export type Page<T> = { edges: readonly { node: T }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
/** The items of a page. */
export const nodesOf = <T>(page: { edges: readonly { node: T }[] }): T[] => page.edges.map((edge) => edge.node);
type NodeOf<C> = C extends { edges: readonly { node: infer N }[] } ? N : never;

type TracedRun = Extract<NonNullable<RunTraceQuery["node"]>, { __typename: "Run" }>;
type TracedTrace = Extract<NonNullable<TracedRun["trace"]>, { __typename: "Trace" }>;
type ExpiredTrace = Extract<NonNullable<TracedRun["trace"]>, { __typename: "TraceExpiredError" }>;
type TracedSpan = NodeOf<TracedTrace["spans"]>;
/** A span of runTrace(), with every one of its events. */
export type RunTraceSpan = Omit<TracedSpan, "events"> & { events: NodeOf<TracedSpan["events"]>[] };
/**
 * A run as runTrace() reads it: every attempt, and its trace with every span and every span's
 * events, as plain arrays. A trace that expired under its retention policy is null, and
 * `traceExpired` says when and how (TraceExpiredError); it is null otherwise.
 */
export type RunTrace = Omit<TracedRun, "attempts" | "trace"> & {
  attempts: NodeOf<TracedRun["attempts"]>[];
  trace: (Omit<TracedTrace, "spans"> & { spans: RunTraceSpan[] }) | null;
  traceExpired: Omit<ExpiredTrace, "__typename"> | null;
};

/** The page sizes runTrace() asks for by default: the server's own defaults. */
const TRACE_PAGE = 100;
const ATTEMPTS_PAGE = 100;

/**
 * Every item of a connection read a page at a time: starting from `firstPage`, `next(after)`
 * reads the page after the cursor `after` (the previous page's `pageInfo.endCursor`), until a
 * page says it has no next page.
 */
export async function readAllPages<T>(firstPage: Page<T>, next: (after: string) => Promise<Page<T> | null>): Promise<T[]> {
  const items = nodesOf(firstPage);
  for (let page: Page<T> | null = firstPage; page?.pageInfo.hasNextPage && page.pageInfo.endCursor; ) {
    page = await next(page.pageInfo.endCursor);
    if (page) items.push(...nodesOf(page));
  }
  return items;
}

export function createClient(options: ClientOptions): DossierClient {
  const doFetch = options.fetch ?? globalThis.fetch;
  const headers = options.headers ?? {};
  const trusted = options.trustedDocuments ?? false;
  const socket = new SharedSocket((holdOpen, gaveUp) => openSocket(options, holdOpen, gaveUp), Math.max(0, options.socketIdleMs ?? SOCKET_IDLE_MS));
  // One subscription over the configured transport.
  const subscribeTo = (document: TypedDocumentNode<unknown, never>, variables: Record<string, unknown>) =>
    options.subscriptions === "sse"
      ? subscribeOverSse(doFetch, options.url, headers, () => operationBody(document, trusted), variables)
      : subscribeOverWs(socket, () => operationBody(document, trusted), variables);

  const outputSource = (runId: string): RunOutputSource => ({
    open: (afterSeq) => subscribeTo(RunOutputDocument, { runId, afterSeq }) as AsyncIterableIterator<RunOutputSubscription>,
    answer: async () => {
      const run = (await request(RunDocument, { id: runId })).node;
      return run?.__typename === "Run" ? run.answer : null;
    },
    isFinal,
  });

  const request: DossierClient["request"] = async (document, ...[variables]) =>
    (await postOperation(doFetch, options.url, headers, await operationBody(document as TypedDocumentNode<unknown, never>, trusted), variables ?? {})) as never;

  return {
    request,

    subscribe(document, ...[variables]) {
      return subscribeTo(document as TypedDocumentNode<unknown, never>, variables ?? {}) as never;
    },

    traceUpdates(runId, options = {}) {
      return resumableTraceUpdates(
        (afterSeq) => subscribeTo(TraceUpdatesDocument, { runId, afterSeq }) as AsyncIterableIterator<TraceUpdatesSubscription>,
        options.afterSeq,
      );
    },

    runTrace: (runId, { pageSize } = {}) => readRunTrace(request, runId, pageSize),

    runOutput(runId, options = {}) {
      return runOutputText(outputSource(runId), options.afterSeq);
    },

    watchRun(runId, options = {}) {
      return watchRunUpdates(outputSource(runId), options.afterSeq);
    },

    async close() {
      await socket.close();
    },
  };
}

async function readRunTrace(request: DossierClient["request"], runId: string, pageSize: number | undefined): Promise<RunTrace | null> {
  const [spansFirst, eventsFirst, attemptsFirst] = [pageSize ?? TRACE_PAGE, pageSize ?? TRACE_PAGE, pageSize ?? ATTEMPTS_PAGE];
  const run = (await request(RunTraceDocument, { id: runId, spansFirst, eventsFirst, attemptsFirst })).node;
  if (run?.__typename !== "Run") return null;
  // Runs and their traces are never deleted: a later page finds its parent again.
  const attempts = await readAllPages(run.attempts, async (after) => {
    const more = (await request(RunAttemptsDocument, { runId, first: attemptsFirst, after })).node;
    return more?.__typename === "Run" ? more.attempts : null;
  });
  const { trace } = run;
  if (!trace) return { ...run, attempts, trace: null, traceExpired: null };
  if (trace.__typename === "TraceExpiredError") return { ...run, attempts, trace: null, traceExpired: { expiredAt: trace.expiredAt, mode: trace.mode } };
  const traceId = trace.id;
  const spans = await readAllPages(trace.spans, async (after) => {
    const more = (await request(TraceSpansDocument, { traceId, first: spansFirst, after, eventsFirst })).node;
    return more?.__typename === "Trace" ? more.spans : null;
  });
  const complete: RunTraceSpan[] = [];
  for (const span of spans) {
    const events = await readAllPages(span.events, async (after) => {
      const more = (await request(SpanEventsDocument, { spanId: span.id, first: eventsFirst, after })).node;
      return more?.__typename === "Span" ? more.events : null;
    });
    complete.push({ ...span, events });
  }
  return { ...run, attempts, trace: { ...trace, spans: complete }, traceExpired: null };
}

/**
 * Errors after which subscribing again cannot help (a refused key or document; an SSE request
 * refused as a WebSocket's would be). One that says when to try again (the database failed for a
 * moment: SERVICE_UNAVAILABLE; RATE_LIMITED) is not: the stream resumes after that wait.
 */
const isFinal = (error: unknown) =>
  error instanceof DossierRequestError && retryAfterMs(error) === undefined && [4401, 4403, 400, 401, 403, 200].includes(error.status);

async function* resumableTraceUpdates(
  open: (afterSeq: string | undefined) => AsyncIterableIterator<TraceUpdatesSubscription>,
  afterSeq: string | undefined,
): AsyncGenerator<TraceUpdate> {
  let last = afterSeq === undefined ? 0 : Number(afterSeq);
  for (let attempt = 0; ; attempt += 1) {
    const stream = open(last === 0 && afterSeq === undefined ? undefined : String(last));
    try {
      for await (const { traceUpdates: update } of stream) {
        attempt = 0;
        // The socket client re-sends a subscription after reconnecting; skip what was seen.
        if (Number(update.seq) <= last && update.kind !== "RESYNC_REQUIRED" && update.kind !== "TRACE_EXPIRED") continue;
        last = Number(update.seq);
        yield update;
        if (update.kind === "TRACE_ENDED" || update.kind === "RESYNC_REQUIRED" || update.kind === "TRACE_EXPIRED") return;
      }
      return;
    } catch (error) {
      if (isFinal(error) || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, backoffMs(error, attempt)));
    } finally {
      await stream.return?.();
    }
  }
}

/** How long the socket outlives its last subscription by default (ClientOptions.socketIdleMs). */
const SOCKET_IDLE_MS = 3_000;

async function openSocket(options: ClientOptions, holdOpen: boolean, gaveUp: () => void): Promise<WsClient> {
  const webSocketImpl = options.webSocketImpl ?? (globalThis as { WebSocket?: unknown }).WebSocket ?? (await import("ws")).WebSocket;
  return createWsClient({
    url: options.wsUrl ?? options.url.replace(/^http/, "ws"),
    webSocketImpl,
    connectionParams: { headers: options.headers ?? {} },
    // Held open, it is SharedSocket that closes it once idle; an idle socket the server closes for
    // good (a revoked key) is no one's error: the next subscription is told.
    lazy: !holdOpen,
    onNonLazyError: gaveUp,
    retryAttempts: 5,
    // A refused key (4401, 4403) will be refused again: fail at once instead of retrying.
    shouldRetry: (event) => !(isCloseEvent(event) && (event.code === 4401 || event.code === 4403)),
  });
}
