// Waiting on work that may outlive the one who waits: a run stops waiting at its deadline while
// a connection it asked for goes on within its own limits.
/** `work`, or the signal's reason as soon as it aborts (the work itself goes on). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
