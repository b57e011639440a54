// When a model reply cut off mid-stream is transient (openai-model.ts): the request is made again,
// as a new call, rather than failing the run.
//
// - The connection lost while the body streamed (reset or closed by the server, a proxy dropping
//   it): always transient.
// - An `error` event in the body (the server had answered 200, then failed): transient when its
//   type or code says the server is busy or failed — a rate limit, overloaded, a server error, a
//   timeout, or an HTTP status 408, 429 or 5xx given as the code. Any other (an invalid request, a
//   content policy, an unknown type) stays the model's error, as a refused request would.

/** Error codes of a connection that failed under a streaming body (node:net, undici). */
const CONNECTION_CODES = new Set([
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENETDOWN",
  "ENETRESET",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_ABORTED",
]);
/** What node:http and fetch say when a body stops short: "aborted" (IncomingMessage), "terminated" (undici). */
const CONNECTION_MESSAGES = new Set(["aborted", "terminated", "other side closed", "socket hang up"]);

/** Error types and codes (as OpenAI-compatible servers send them) that mean the server is busy or failed. */
const TRANSIENT = new Set([
  "rate_limit_exceeded",
  "rate_limit_error",
  "requests",
  "tokens",
  "overloaded",
  "overloaded_error",
  "server_error",
  "server_overloaded",
  "internal_error",
  "internal_server_error",
  "api_error",
  "service_unavailable",
  "service_unavailable_error",
  "timeout",
  "timeout_error",
]);

/**
 * Why the connection was lost, when `error` (thrown while reading a reply's body) is a connection
 * lost mid-stream: its message and code, read through its causes. Undefined for anything else.
 */
export function lostMidStream(error: unknown): string | undefined {
  let cause: unknown = error;
  for (let depth = 0; cause instanceof Error && depth < 5; depth += 1, cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if ((typeof code === "string" && CONNECTION_CODES.has(code)) || CONNECTION_MESSAGES.has(cause.message)) {
      return typeof code === "string" && code !== cause.message ? `${cause.message}, ${code}` : cause.message;
    }
  }
  return undefined;
}

/** Whether an error event's type or code says the server is busy or failed (see above). */
export function transientErrorEvent(type: unknown, code: unknown): boolean {
  const status = typeof code === "number" ? code : typeof code === "string" && /^\d{3}$/.test(code) ? Number(code) : undefined;
  if (status !== undefined) return status === 408 || status === 429 || status >= 500;
  return [type, code].some((value) => typeof value === "string" && TRANSIENT.has(value.toLowerCase()));
}
