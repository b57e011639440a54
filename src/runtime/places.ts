// A fixed number of places, taken first come, first served: one asked for when all are taken
// waits for one to be given back, in the order asked (the place passes straight to it). Model
// requests to one endpoint (MODEL_MAX_CONCURRENCY) and one reply's tool calls
// (TOOL_MAX_CONCURRENCY) are bounded with it.
export class Places {
  private taken = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  /**
   * Resolves with the release of a place once one is free; rejects with `abort()` when `signal`
   * aborts first (the place it waited for goes to the next in line). Releasing twice releases once.
   */
  async acquire(signal?: AbortSignal, abort: () => Error = () => new Error("aborted")): Promise<() => void> {
    if (signal?.aborted) throw abort();
    if (this.taken >= this.max) {
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          signal?.removeEventListener("abort", stop);
          resolve();
        };
        const stop = () => {
          this.waiting.splice(this.waiting.indexOf(turn), 1);
          reject(abort());
        };
        this.waiting.push(turn);
        signal?.addEventListener("abort", stop, { once: true });
      });
    } else this.taken += 1;
    return this.releaser();
  }

  /**
   * `task`'s result, run in a place; the place is given back however it ends. With a place free,
   * the task starts at once (in the caller's step, so tasks given in order start in order).
   */
  run<T>(task: () => Promise<T>): Promise<T> {
    if (this.taken < this.max) {
      this.taken += 1;
      return this.within(task, this.releaser());
    }
    return this.acquire().then((release) => this.within(task, release));
  }

  private async within<T>(task: () => Promise<T>, release: () => void): Promise<T> {
    try {
      return await task();
    } finally {
      release();
    }
  }

  /** The release of a place just taken: it passes straight to the next in line, if any. */
  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.taken -= 1;
    };
  }
}
