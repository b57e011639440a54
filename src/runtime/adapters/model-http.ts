// How the OpenAI client (openai-model.ts) reaches its endpoint: a `fetch` over node:http(s), its
// connections kept alive per endpoint. The global fetch carries each request through the Fetch
// standard's machinery (the body streamed through an async iterator, the request and its
// controller objects, the reply's body through a second stream); with a model that answers at
// once that was about a quarter of a millisecond of CPU per request more than this (a local
// server answering one streamed tool call: 0.6–0.9 ms against 0.4–0.6 ms per request, six
// interleaved rounds), on the path between one turn and the next. The reply is handed to the SDK as
// the Response it reads (its body a web stream, which the SDK's SSE reader takes). What the SDK
// relies on stays as fetch gives it: an abort rejects with the signal's reason (the SDK tells a timeout
// from a cancellation by its own signal), a failed connection rejects with the system error
// ("connect ECONNREFUSED …"), a compressed reply is decompressed, and a redirect is followed by
// the global fetch; a request this does not take on (a body that is neither text nor bytes) goes
// through the global fetch as before. A reply whose body goes silent — a server that hangs, or a
// connection lost without a reset (half-open) — ends after `idleTimeoutMs` without a byte, as a
// lost connection does (ETIMEDOUT): the adapter makes the request again (interruption.ts) instead
// of holding the run until its deadline. The body goes to the SDK as whole events, within the
// request's BodyBound when it gives one (`replyBound`, see model-body.ts).
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { type BodyBound, replyBody } from "./model-body.js";

const REDIRECT = new Set([301, 302, 303, 307, 308]);
/** Statuses a Response is made without a body for. */
const NO_BODY = new Set([101, 204, 205, 304]);

/** What a request may give this fetch besides fetch's own: its reply's bound (through the SDK's `fetchOptions`). */
export type EndpointInit = RequestInit & { replyBound?: BodyBound };

/** A fetch for one endpoint's requests: its connections kept alive between requests. */
export function endpointFetch(options: { idleTimeoutMs?: number } = {}): typeof fetch {
  const agents = { "http:": new HttpAgent({ keepAlive: true }), "https:": new HttpsAgent({ keepAlive: true }) };
  return async (input, init: EndpointInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const body = init.body;
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent || input instanceof Request || !(body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array)) {
      return fetch(input, init);
    }
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    const headers: Record<string, string> = {};
    for (const [name, value] of new Headers(init.headers)) headers[name] = value;
    const bytes = body === undefined || body === null ? undefined : typeof body === "string" ? Buffer.from(body) : body;
    if (bytes) headers["content-length"] = String(bytes.byteLength);
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, { method: init.method ?? "GET", headers, agent, ...(signal && { signal }) }, resolve);
      req.on("error", (error) => reject(signal?.aborted ? abortReason(signal) : error));
      req.end(bytes);
    });
    if (REDIRECT.has(res.statusCode ?? 0)) {
      // The server did not take the request: the global fetch sends it again and follows.
      res.resume();
      return fetch(input, init);
    }
    const answer = new Headers();
    for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) answer.set(name, Array.isArray(value) ? value.join(", ") : value);
    // Aborted while the body streams: the SDK's reader sees the stream end in an error, as with fetch.
    signal?.addEventListener("abort", () => res.destroy(abortReason(signal) as Error), { once: true });
    const status = res.statusCode ?? 0;
    if (options.idleTimeoutMs !== undefined && !NO_BODY.has(status)) endWhenSilent(res, options.idleTimeoutMs);
    const stream = NO_BODY.has(status) ? (res.resume(), null) : replyBody(decoded(res), init.replyBound);
    return new Response(stream, { status, statusText: res.statusMessage ?? "", headers: answer });
  };
}

/** Ends the reply with an ETIMEDOUT error once `ms` pass without a byte of its body. */
function endWhenSilent(res: IncomingMessage, ms: number): void {
  const silent = () => res.destroy(Object.assign(new Error(`the model server sent nothing for ${ms / 1000} s`), { code: "ETIMEDOUT" }));
  const timer = setTimeout(silent, ms);
  // Counting bytes, not reading them: the reader's own pace (back-pressure) is left as it is.
  res.prependListener("data", () => timer.refresh());
  res.once("close", () => clearTimeout(timer));
}

/** The reply's body as sent before its Content-Encoding (fetch decodes gzip, deflate and br the same way). */
function decoded(res: IncomingMessage): Readable {
  const encoding = res.headers["content-encoding"]?.trim().toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) return res;
  res.on("error", (error) => decoder.destroy(error));
  // The decoded body ended early (its bound passed, its reader gone): the connection is closed, not drained.
  decoder.once("close", () => {
    if (!res.complete) res.destroy();
  });
  return res.pipe(decoder);
}

/** What fetch rejects with when its signal aborts: the signal's reason (an AbortError unless one was given). */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? Object.assign(new Error("This operation was aborted"), { name: "AbortError" });
}
