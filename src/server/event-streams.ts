// The subscriptions served over HTTP (SSE), kept under the Node request that carries each, so the
// server that received them can end them when it closes: each then sends its own end (SSE's
// `event: complete`) and its response ends, rather than holding the server's close() until its
// connection is cut. Keyed by request, one server ends only its own: the same API may be served
// again (a restarted server), and its new subscriptions run as before.
import type { ExecutionResult } from "graphql";
import { isAsyncIterable, type Plugin } from "graphql-yoga";

const ENDED: unique symbol = Symbol("ended");

export class EventStreams {
  readonly #open = new Map<object, Set<() => void>>();

  /** Wraps every subscription whose context holds the Node request it came with (Yoga's server context). */
  plugin(): Plugin {
    return {
      onSubscribe: ({ args }) => {
        const request = (args.contextValue as { req?: unknown }).req;
        if (typeof request !== "object" || request === null) return;
        return {
          onSubscribeResult: ({ result, setResult }) => {
            if (isAsyncIterable(result)) setResult(untilEnded(result, (end) => this.#keep(request, end)));
          },
        };
      },
    };
  }

  /** Ends, at once, the subscriptions these requests carry: each completes as if its source had. */
  end(requests: Iterable<object>): void {
    for (const request of requests) for (const end of this.#open.get(request) ?? []) end();
  }

  #keep(request: object, end: () => void): () => void {
    const ends = this.#open.get(request) ?? new Set();
    this.#open.set(request, ends.add(end));
    return () => {
      ends.delete(end);
      if (ends.size === 0) this.#open.delete(request);
    };
  }
}

/**
 * The source's results until it is ended, then the end. An iterator, not an async generator: a
 * generator waiting for its source's next event could not be returned (a client leaving) until
 * that event came, and would hold the source open.
 */
function untilEnded(source: AsyncIterable<ExecutionResult>, keep: (end: () => void) => () => void): AsyncIterableIterator<ExecutionResult> {
  const iterator = source[Symbol.asyncIterator]();
  let end = () => {};
  const ended = new Promise<typeof ENDED>((resolve) => {
    end = () => resolve(ENDED);
  });
  const release = keep(end);
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    release();
    await iterator.return?.();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (finished) return { done: true, value: undefined };
      const next = await Promise.race([iterator.next(), ended]);
      if (next === ENDED) {
        void finish().catch(() => undefined);
        return { done: true, value: undefined };
      }
      if (next.done) await finish();
      return next;
    },
    async return() {
      await finish();
      return { done: true, value: undefined };
    },
  };
}
