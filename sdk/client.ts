// Dossier's thin client: typed operations over HTTP, subscriptions over graphql-ws as async
// iterators. Use it with the typed documents in ./generated/graphql.ts:
//
//   const dossier = createClient({ url: "http://localhost:4000/graphql" });
//   const result = await dossier.request(CreateWorkspaceDocument, { input: { title, goal } });
//   for await (const event of dossier.subscribe(WorkspaceEventsDocument, { workspaceId })) { … }
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { type GraphQLFormattedError, print } from "graphql";
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws";
import { TraceUpdatesDocument, type TraceUpdatesSubscription } from "./generated/graphql.js";

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
};

/** The server answered with GraphQL errors (typed errors come back as data, not as this). */
export class DossierRequestError extends Error {
  constructor(
    readonly errors: readonly GraphQLFormattedError[],
    readonly status: number,
  ) {
    super(errors.map((error) => error.message).join("; ") || `HTTP ${status}`);
    this.name = "DossierRequestError";
  }
}

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
   * ends after TRACE_ENDED or RESYNC_REQUIRED, or when you stop iterating.
   */
  traceUpdates(runId: string, options?: { afterSeq?: string }): AsyncIterableIterator<TraceUpdate>;
  /** Closes the subscription socket, if one was opened. */
  close(): Promise<void>;
};

export type TraceUpdate = TraceUpdatesSubscription["traceUpdates"];

export function createClient(options: ClientOptions): DossierClient {
  const doFetch = options.fetch ?? globalThis.fetch;
  const headers = options.headers ?? {};
  let ws: Promise<WsClient> | undefined;

  const socket = () => {
    ws ??= openSocket(options);
    return ws;
  };

  return {
    async request(document, ...[variables]) {
      const response = await doFetch(options.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
        body: JSON.stringify({ query: print(document), variables: variables ?? {} }),
      });
      const body = (await response.json().catch(() => ({}))) as {
        data?: unknown;
        errors?: GraphQLFormattedError[];
      };
      if (body.errors?.length || body.data == null) throw new DossierRequestError(body.errors ?? [], response.status);
      return body.data as never;
    },

    subscribe(document, ...[variables]) {
      return subscribeOver(socket(), print(document), variables ?? {}) as never;
    },

    traceUpdates(runId, options = {}) {
      return resumableTraceUpdates((afterSeq) =>
        subscribeOver(socket(), print(TraceUpdatesDocument), { runId, afterSeq }) as AsyncIterableIterator<TraceUpdatesSubscription>,
      options.afterSeq);
    },

    async close() {
      if (ws) await (await ws).dispose();
      ws = undefined;
    },
  };
}

/** Errors after which subscribing again cannot help. */
const isFinal = (error: unknown) =>
  error instanceof DossierRequestError && (error.status === 4401 || error.status === 4403 || error.status === 400 || error.status === 200);

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
        if (Number(update.seq) <= last && update.kind !== "RESYNC_REQUIRED") continue;
        last = Number(update.seq);
        yield update;
        if (update.kind === "TRACE_ENDED" || update.kind === "RESYNC_REQUIRED") return;
      }
      return;
    } catch (error) {
      if (isFinal(error) || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    } finally {
      await stream.return?.();
    }
  }
}

async function openSocket(options: ClientOptions): Promise<WsClient> {
  const webSocketImpl =
    options.webSocketImpl ?? (globalThis as { WebSocket?: unknown }).WebSocket ?? (await import("ws")).WebSocket;
  return createWsClient({
    url: options.wsUrl ?? options.url.replace(/^http/, "ws"),
    webSocketImpl,
    connectionParams: { headers: options.headers ?? {} },
    lazy: true,
    retryAttempts: 5,
    // A refused key (4401, 4403) will be refused again: fail at once instead of retrying.
    shouldRetry: (event) => !(isCloseEvent(event) && (event.code === 4401 || event.code === 4403)),
  });
}

/**
 * One subscription as an async iterator. Subscribing starts at the first next(); return() ends it
 * at once — also while a next() is waiting, which then resolves as done.
 */
function subscribeOver(
  socket: Promise<WsClient>,
  query: string,
  variables: Record<string, unknown>,
): AsyncIterableIterator<unknown> {
  type Results = AsyncIterableIterator<{ data?: unknown; errors?: readonly unknown[] }>;
  let inner: Results | undefined;
  let closed = false;
  let onClose: () => void = () => undefined;
  const closing = new Promise<IteratorResult<unknown>>((resolve) => {
    onClose = () => resolve({ done: true, value: undefined });
  });
  const iterator: AsyncIterableIterator<unknown> = {
    async next() {
      if (closed) return { done: true, value: undefined };
      inner ??= (await socket).iterate({ query, variables }) as unknown as Results;
      try {
        const step = await Promise.race([inner.next(), closing]);
        if (step.done) return { done: true, value: undefined };
        const result = step.value as { data?: unknown; errors?: GraphQLFormattedError[] };
        if (result.errors?.length || result.data == null) throw new DossierRequestError(result.errors ?? [], 200);
        return { done: false, value: result.data };
      } catch (error) {
        throw asRequestError(error);
      }
    },
    async return() {
      closed = true;
      onClose();
      await inner?.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

type CloseEventLike = { code: number; reason: string };

function isCloseEvent(value: unknown): value is CloseEventLike {
  return typeof value === "object" && value !== null && "code" in value && "reason" in value;
}

/** A refused subscription, or the socket closing under one, as a DossierRequestError. */
function asRequestError(error: unknown): unknown {
  if (isCloseEvent(error)) {
    return new DossierRequestError([{ message: error.reason || `The connection closed (${error.code}).` }], error.code);
  }
  // The server refused the subscription itself (validation, limits): it sends GraphQL errors.
  if (Array.isArray(error)) return new DossierRequestError(error as GraphQLFormattedError[], 400);
  return error;
}
