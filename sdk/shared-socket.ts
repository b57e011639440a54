// The one graphql-ws socket a client's subscriptions share. It opens with the first subscription
// and stays open for `idleMs` after the last one ended, so that the next one (the next run watched,
// a page's next view) goes out on it at once instead of waiting for a new connection, its upgrade
// and its acknowledgement. close() ends it at once, and an idle socket never holds a Node.js
// process open longer than its idle time.
import type { Client as WsClient } from "graphql-ws";

export class SharedSocket {
  private client: Promise<WsClient> | undefined;
  private active = 0;
  private idle: ReturnType<typeof setTimeout> | undefined;
  private closing: Promise<void> | undefined;

  /**
   * `open(holdOpen)` creates the graphql-ws client: one that holds its socket open until disposed
   * when `idleMs` > 0 (this class closes it), else one that closes it with its last subscription.
   */
  constructor(
    private readonly open: (holdOpen: boolean) => Promise<WsClient>,
    private readonly idleMs: number,
  ) {}

  /** The client for one subscription; `release` once when the subscription ended. */
  acquire(): Promise<WsClient> {
    clearTimeout(this.idle);
    this.idle = undefined;
    this.active += 1;
    this.client ??= this.open(this.idleMs > 0);
    return this.client;
  }

  release(): void {
    this.active -= 1;
    // A lazy socket (idleMs 0) closes itself; an infinite idle time keeps it until close().
    if (this.active > 0 || this.idleMs <= 0 || !Number.isFinite(this.idleMs)) return;
    this.idle = setTimeout(() => void this.close(), this.idleMs);
    (this.idle as { unref?: () => void }).unref?.();
  }

  /**
   * Closes the socket now; a later subscription opens another. Never fails: a socket whose server
   * went away (its reconnection refused) is closed already.
   */
  async close(): Promise<void> {
    clearTimeout(this.idle);
    this.idle = undefined;
    const client = this.client;
    this.client = undefined;
    // A close already on its way (the idle one) is waited for too.
    const closing = (async () => {
      const opened = await client?.catch(() => undefined);
      await Promise.resolve(opened?.dispose()).catch(() => undefined);
    })();
    const before = this.closing;
    this.closing = closing;
    await Promise.all([before, closing]);
  }
}

/** `inner`, calling `end` once when it finishes, fails or is returned. */
export function endingOnce<T>(inner: AsyncIterator<T>, end: () => void): AsyncIterator<T> {
  let ended = false;
  const once = () => {
    if (ended) return;
    ended = true;
    end();
  };
  return {
    async next() {
      try {
        const step = await inner.next();
        if (step.done) once();
        return step;
      } catch (error) {
        once();
        throw error;
      }
    },
    async return(value?: unknown) {
      once();
      return (await inner.return?.(value)) ?? { done: true, value: undefined };
    },
  };
}
