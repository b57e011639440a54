// How the client sends an operation: its document's text, or — with `trustedDocuments` — only its
// documentId; subscriptions over graphql-ws (one socket for all) or over SSE (one HTTP response
// each, Yoga's "distinct connections" mode of GraphQL over Server-Sent Events).
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { type GraphQLFormattedError, print } from "graphql";
import { endingOnce, type SharedSocket } from "./shared-socket.js";

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

/**
 * The wait, in milliseconds, the server asked for before trying again — `extensions.retryAfterSeconds`
 * of SERVICE_UNAVAILABLE (the database failed for a moment) or RATE_LIMITED — or undefined when it asked none.
 */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof DossierRequestError)) return undefined;
  const seconds = error.errors.map((each) => each.extensions?.retryAfterSeconds).find((value) => typeof value === "number" && value >= 0);
  return seconds === undefined ? undefined : (seconds as number) * 1000;
}

/** How long a resuming stream waits before try `attempt + 1`: 250 ms doubling, never less than the server asked. */
export function backoffMs(error: unknown, attempt: number): number {
  return Math.max(retryAfterMs(error) ?? 0, 250 * 2 ** attempt);
}

/** What identifies an operation in a request: `query` (the text) or `documentId`. */
export type OperationBody = { query: string } | { documentId: string };

const sent = new WeakMap<object, { text: string; id?: Promise<string> }>();

/**
 * The document as the client sends it. Its documentId is "sha256:" and the lower-case hex
 * SHA-256 of that text (the GraphQL-over-HTTP persisted-documents appendix's SHA256 hex document
 * identifier): the ids of the SDK's persisted-documents.json, which the server trusts.
 */
export async function operationBody(document: TypedDocumentNode<unknown, never>, trusted: boolean): Promise<OperationBody> {
  let entry = sent.get(document);
  if (!entry) sent.set(document, (entry = { text: print(document) }));
  if (!trusted) return { query: entry.text };
  entry.id ??= documentIdOf(entry.text);
  return { documentId: await entry.id };
}

/** The SHA256 hex document identifier of a document's text (Web Crypto: Node.js and browsers alike). */
export async function documentIdOf(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return `sha256:${[...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** One operation over HTTP: its data, or its errors as a DossierRequestError. */
export async function postOperation(
  doFetch: typeof globalThis.fetch,
  url: string,
  headers: Record<string, string>,
  operation: OperationBody,
  variables: Record<string, unknown>,
): Promise<unknown> {
  const response = await doFetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body: JSON.stringify({ ...operation, variables }),
  });
  const body = (await response.json().catch(() => ({}))) as { data?: unknown; errors?: GraphQLFormattedError[] };
  if (body.errors?.length || body.data == null) throw new DossierRequestError(body.errors ?? [], response.status);
  return body.data;
}

type Step = { done: true; value: undefined } | { done: false; value: unknown };
const DONE: Step = { done: true, value: undefined };

/**
 * The data of `start()`'s results (a result with errors throws them as a DossierRequestError),
 * starting at the first next(). return() ends it at once — also while a next() is waiting,
 * which then resolves as done.
 */
function closableIterator(start: () => Promise<AsyncIterator<unknown>>, stop: () => void = () => undefined): AsyncIterableIterator<unknown> {
  let inner: Promise<AsyncIterator<unknown>> | undefined;
  let closed = false;
  let onClose: () => void = () => undefined;
  const closing = new Promise<Step>((resolve) => {
    onClose = () => resolve(DONE);
  });
  const end = async () => {
    closed = true;
    onClose();
    stop();
    // An SSE stream's reader fails once aborted: ending it that way is no error.
    await (await inner?.catch(() => undefined))?.return?.()?.catch(() => undefined);
  };
  const iterator: AsyncIterableIterator<unknown> = {
    async next() {
      if (closed) return DONE;
      inner ??= start();
      try {
        const step = (await Promise.race([inner.then((it) => it.next()), closing])) as Step;
        if (step.done || closed) return DONE;
        const result = step.value as { data?: unknown; errors?: GraphQLFormattedError[] };
        if (result.errors?.length || result.data == null) throw new DossierRequestError(result.errors ?? [], 200);
        return { done: false, value: result.data };
      } catch (error) {
        // An error ends the subscription: a loop that throws does not call return(), so it is
        // ended here, letting its socket go (shared-socket.ts) as a return would.
        await end();
        throw asRequestError(error);
      }
    },
    async return() {
      await end();
      return DONE;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

/** One subscription over the shared graphql-ws socket. graphql-ws requires a `query` string: a documentId goes with an empty one. */
export function subscribeOverWs(socket: SharedSocket, body: () => Promise<OperationBody>, variables: Record<string, unknown>): AsyncIterableIterator<unknown> {
  return closableIterator(async () => {
    const payload = { query: "", ...(await body()), variables };
    const client = socket.acquire();
    try {
      return endingOnce((await client).iterate(payload), () => socket.release());
    } catch (error) {
      socket.release();
      throw error;
    }
  });
}

/** One subscription over SSE: a POST whose response is the stream of its results. */
export function subscribeOverSse(
  doFetch: typeof globalThis.fetch,
  url: string,
  headers: Record<string, string>,
  body: () => Promise<OperationBody>,
  variables: Record<string, unknown>,
): AsyncIterableIterator<unknown> {
  const abort = new AbortController();
  return closableIterator(
    async () => {
      const response = await doFetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
        body: JSON.stringify({ ...(await body()), variables }),
        signal: abort.signal,
      });
      if (!response.ok || !response.body || !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        const refused = (await response.json().catch(() => ({}))) as { errors?: GraphQLFormattedError[] };
        throw new DossierRequestError(refused.errors ?? [], response.status);
      }
      return sseResults(response.body);
    },
    () => abort.abort(),
  );
}

/** The `next` events' results of an SSE response, until its `complete` event. */
async function* sseResults(stream: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, "\n");
    for (let end = buffered.indexOf("\n\n"); end !== -1; end = buffered.indexOf("\n\n")) {
      const lines = buffered.slice(0, end).split("\n");
      buffered = buffered.slice(end + 2);
      const event = lines
        .find((line) => line.startsWith("event:"))
        ?.slice(6)
        .trim();
      const data = lines
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (event === "complete") return;
      if (event === "next" || (event === undefined && data !== "")) yield JSON.parse(data);
    }
  }
  // The connection dropped (a network blip, a server restart): not an end, an error to resume from.
  throw new DossierRequestError([{ message: "The SSE stream ended before the subscription completed." }], 0);
}

type CloseEventLike = { code: number; reason: string };

export function isCloseEvent(value: unknown): value is CloseEventLike {
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
