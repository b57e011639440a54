// Deployments that share one Redis must never hear each other: every channel this process
// publishes to or listens on is named with its prefix (REDIS_PREFIX), so `run:changes` of one
// deployment is another channel than the other's.
type Listener = Parameters<EventTarget["addEventListener"]>[1];

/** An EventTarget whose event types are `prefix` + the type its callers use. */
export class PrefixedEventTarget implements EventTarget {
  constructor(
    private readonly inner: EventTarget,
    private readonly prefix: string,
  ) {}

  addEventListener(type: string, listener: Listener, options?: AddEventListenerOptions | boolean): void {
    this.inner.addEventListener(this.prefix + type, listener, options);
  }

  removeEventListener(type: string, listener: Listener, options?: EventListenerOptions | boolean): void {
    this.inner.removeEventListener(this.prefix + type, listener, options);
  }

  dispatchEvent(event: Event): boolean {
    return this.inner.dispatchEvent(new CustomEvent(this.prefix + event.type, { detail: (event as CustomEvent).detail }));
  }
}
