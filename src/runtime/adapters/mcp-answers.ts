// What Dossier sends an HTTP MCP server unasked by its own calls: the answers to the requests the
// server makes (`ping`, or methods Dossier does not offer, which it refuses) and its notifications.
// The transport sends each as a POST of its own. A server that makes requests without end on its
// event stream, and leaves those POSTs unanswered, would have Dossier open a socket for each and
// spend the process's time on them, for every other principal too. So such a POST may take
// ANSWER_TIMEOUT_MS at most, and past ANSWERS_IN_FLIGHT of them at once the server is not answered.

/** POSTs carrying answers or notifications open at once, per connection; further answers are not sent. */
export const ANSWERS_IN_FLIGHT = 4;
/** The longest one such POST may take. */
export const ANSWER_TIMEOUT_MS = 10_000;
/** Dossier's answers and notifications are small; a longer body is one of its own requests. */
const ANSWER_MAX_CHARS = 4_096;

/** A request of Dossier's own (it has both a method and an id), which its caller bounds. */
function isOwnRequest(body: string): boolean {
  if (body.length > ANSWER_MAX_CHARS) return true;
  try {
    const message = JSON.parse(body) as { method?: unknown; id?: unknown };
    return typeof message.method === "string" && message.id !== undefined;
  } catch {
    return true;
  }
}

/** `fetch` for one connection, with its answers and notifications bounded as above. */
export function answersBounded(fetch: typeof globalThis.fetch): typeof globalThis.fetch {
  let inFlight = 0;
  return async (input, init) => {
    if (init?.method !== "POST" || typeof init.body !== "string" || isOwnRequest(init.body)) return fetch(input, init);
    // Not sent: to the transport, accepted as if the server had taken it.
    if (inFlight >= ANSWERS_IN_FLIGHT) return new Response(null, { status: 202 });
    inFlight += 1;
    const timeout = AbortSignal.timeout(ANSWER_TIMEOUT_MS);
    try {
      return await fetch(input, { ...init, signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
    } finally {
      inFlight -= 1;
    }
  };
}
