// Back-pressure towards a model endpoint (issue 36): at most `maxConcurrency` requests in flight
// per endpoint in this process, and a bounded retry policy for requests the endpoint refused before
// streaming anything — waiting as its Retry-After says (or backing off), and, past the bound,
// telling the run to come back later (ModelRetryLater) instead of failing it.
import { ModelRetryLater } from "../ports/model.js";
import { Places } from "../places.js";

export type BackPressureOptions = {
  /** Retries of one request the endpoint refused (429, 5xx) or could not be reached for; default 4. */
  maxRetries?: number;
  /** The longest one wait may be; an endpoint asking for longer gets the attempt handed back at once. Default 20 s. */
  maxDelayMs?: number;
  /** The first backoff without a Retry-After, doubled on every retry; default 500 ms. */
  baseDelayMs?: number;
};

/** What a failed try says about trying again. */
export type Refusal = {
  /** 429 or 5xx: the endpoint is busy; past the bound the attempt is handed back, not failed. */
  busy: boolean;
  /** Worth another try (busy, or the endpoint could not be reached). */
  retryable: boolean;
  /** What the endpoint's Retry-After asked for, when it sent one. */
  retryAfterMs?: number;
};

/**
 * How long to wait before retry number `retry + 1` of a refused request, or undefined when the
 * error stands. Past the bound a busy endpoint's refusal becomes ModelRetryLater.
 */
export function retryDelay(error: Error, refusal: Refusal, retry: number, options: BackPressureOptions): number | undefined {
  if (!refusal.retryable) return undefined;
  const maxRetries = options.maxRetries ?? 4;
  const maxDelayMs = options.maxDelayMs ?? 20_000;
  // Whole milliseconds: a handed-back attempt stores its wait as an integer.
  const backoff = Math.round(Math.min(maxDelayMs, (options.baseDelayMs ?? 500) * 2 ** retry * (0.8 + Math.random() * 0.4)));
  const wait = refusal.retryAfterMs ?? backoff;
  if (retry < maxRetries && wait <= maxDelayMs) return wait;
  if (!refusal.busy) return undefined;
  throw new ModelRetryLater(`${error.message} (still refused after ${retry + 1} tries: the run will resume later)`, wait, { cause: error });
}

/** Reads Retry-After (seconds or an HTTP date) or retry-after-ms; undefined when absent or unreadable. */
export function retryAfterMs(headers: { get(name: string): string | null } | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits `ms`, or rejects with `abort()`'s error as soon as the signal aborts. */
export function pause(ms: number, signal: AbortSignal | undefined, abort: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abort());
    const done = () => {
      signal?.removeEventListener("abort", stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(abort());
    };
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** Counts requests in flight to one endpoint; a request over the cap waits for one to end (FIFO, places.ts). */
export class EndpointGate extends Places {
  private static readonly gates = new Map<string, EndpointGate>();

  /** The gate of an endpoint, shared by every model of this process that calls it. */
  static of(endpoint: string, max: number): EndpointGate {
    const key = `${endpoint} ${max}`;
    let gate = EndpointGate.gates.get(key);
    if (!gate) EndpointGate.gates.set(key, (gate = new EndpointGate(max)));
    return gate;
  }
}
