// The one graphql-ws socket a client's subscriptions share. It opens with the first subscription
// and stays open for `idleMs` after the last one ended, so that the next one (the next run watched,
// a page's next view) goes out on it at once instead of waiting for a new connection, its upgrade
// and its acknowledgement. close() ends it (waiting a second at most), and an idle socket never
// holds a Node.js process open longer than its idle time.
import type { Client as WsClient } from "graphql-ws";

/** The longest a timer waits (setTimeout fires at once past it): a longer idle time is forever. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;
/** How long close() waits for the socket to close (a reconnection in its backoff would hold it for seconds). */
const CLOSE_WAIT_MS = 1_000;

export class SharedSocket {
  private client: Promise<WsClient> | undefined;
  private active = 0;
  private idle: ReturnType<typeof setTimeout> | undefined;
  private closing: Promise<void> | undefined;

  /**
   * `open(holdOpen, gaveUp)` creates the graphql-ws client: one that holds its socket open until
   * disposed when `idleMs` > 0 (this class closes it), else one that closes it with its last
   * subscription; `gaveUp` when a held client stopped reconnecting (its server gone, its key refused).
   */
  constructor(
    private readonly open: (holdOpen: boolean, gaveUp: () => void) => Promise<WsClient>,
    private readonly idleMs: number,
  ) {}

  /** The client for one subscription; `release` once when the subscription ended. */
  acquire(): Promise<WsClient> {
    clearTimeout(this.idle);
    this.idle = undefined;
    this.active += 1;
    if (!this.client) {
      // A client that could not be created, or gave up, is not kept: the next subscription starts afresh.
      const forget = () => {
        if (this.client === client) this.client = undefined;
      };
      const client = this.open(this.idleMs > 0, forget);
      client.catch(forget);
      this.client = client;
    }
    return this.client;
  }

  release(): void {
    this.active -= 1;
    // A lazy socket (idleMs 0) closes itself; an idle time past any timer's keeps it until close().
    if (this.active > 0 || this.idleMs <= 0 || this.idleMs > LONGEST_TIMER_MS) return;
    this.idle = setTimeout(() => void this.close(), this.idleMs);
    (this.idle as { unref?: () => void }).unref?.();
  }

  /**
   * Closes the socket; a later subscription opens another. Never fails (a socket whose server went
   * away is closed already), and waits a second at most: a socket reconnecting in its backoff
   * closes once its attempt ends, without holding the caller.
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
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise((resolve) => {
      timer = setTimeout(resolve, CLOSE_WAIT_MS);
      (timer as { unref?: () => void }).unref?.();
    });
    await Promise.race([Promise.all([before, closing]), waited]);
    clearTimeout(timer);
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
