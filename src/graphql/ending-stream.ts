// A subscription's events that end, with an error, when something outside them says so: an access
// token expiring (access-grants.ts's untilExpiry), the workspace link its grant rests on removed
// (withdrawn-grants.ts's whileGranted).

/** What ends a stream, and what watches for it. */
export type StreamEnd = {
  /** Resolves, with the error the stream ends with, once it is to end (a timer fired, a check said no). */
  ending: Promise<Error>;
  /** The error the stream ends with if it is to end already: asked before each event is handed on. */
  endedNow: () => Error | undefined;
  /** Awaited before each event is handed on: an answer being asked for, which may end the stream first. */
  settled?: () => Promise<void>;
  /** Lets go of what watches for the end (timers, listeners; a promise is awaited); called once, when the stream ends by any path. */
  stop: () => unknown;
};

/**
 * The events until `end` says the stream ends; then its error. An iterator, not an async
 * generator: a generator waiting for its source's next event could not be returned (a client
 * unsubscribing) until that event came or the stream ended, and would hold the source and the
 * subscription's quota place until then. The source's return() is called when the stream ends
 * or the subscriber leaves; after the source failed (nobody calls return() after a throw) only
 * what watches for the end is let go.
 */
export function endingWhen<T>(events: AsyncIterable<T>, end: StreamEnd): AsyncIterableIterator<T> {
  const iterator = events[Symbol.asyncIterator]();
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    await Promise.all([end.stop(), iterator.return?.()]);
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (finished) return { done: true, value: undefined };
      // An iterator's result is a plain object: an Error here is the stream's end.
      let next: IteratorResult<T> | Error;
      try {
        next = end.endedNow() ?? (await Promise.race([iterator.next(), end.ending]));
        if (!(next instanceof Error) && end.settled) await end.settled();
      } catch (error) {
        // The source failed: it has ended, and nobody calls return() after a throw — what watches goes now.
        finished = true;
        const stopping = end.stop();
        if (stopping instanceof Promise) await stopping;
        throw error;
      }
      const error = end.endedNow() ?? (next instanceof Error ? next : undefined);
      if (error || next instanceof Error) {
        void finish().catch(() => undefined);
        throw error;
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
