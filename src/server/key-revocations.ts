// Closes what a revoked API key still holds open. HTTP requests need nothing: each looks its key
// up. A subscription authenticated once, when it started, so every open one registers its key
// here; `apikey:revoked` (from any instance, through the event bus) ends it at once, and a check
// of the open keys every `sweepMs` catches revocations the bus did not carry (`npm run key:revoke`
// without Redis, a lost message). A key revoked while a subscription was starting — authenticated
// just before, watched just after — is remembered for a while, so its watch ends it at once too.
import { type ExecutionResult, GraphQLError } from "graphql";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import { type EventBus, SubscriberOverflowError } from "../events/topics.js";
import type { GraphQLContext } from "../graphql/context.js";
import type { PrismaClient } from "../generated/prisma/client.js";
import type { Logger } from "../logger.js";

export const KEY_REVOKED_MESSAGE = "API key revoked";

/** How long a revocation is remembered for the watches that come after it (a start is never this slow). */
const REMEMBERED_MS = 5 * 60_000;

export class KeyRevocations {
  private readonly watchers = new Map<string, Set<() => void>>();
  /** Keys revoked lately, by when this process heard of it. */
  private readonly recent = new Map<string, number>();
  private listening: AsyncIterator<{ keyId: string }>;
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly deps: { prisma: PrismaClient; events: EventBus; logger: Logger; sweepMs?: number }) {
    this.timer = setInterval(() => void this.sweep(), deps.sweepMs ?? 2_000);
    this.timer.unref();
    let listening = deps.events.subscribe("apikey:revoked")[Symbol.asyncIterator]();
    this.listening = listening;
    void (async () => {
      for (;;) {
        let next: IteratorResult<{ keyId: string }>;
        try {
          next = await listening.next();
        } catch (error) {
          // More revocations in one burst than the bus keeps for one subscriber: the sweep
          // catches those missed, and it listens again.
          if (!(error instanceof SubscriberOverflowError) || this.closed) throw error;
          listening = deps.events.subscribe("apikey:revoked")[Symbol.asyncIterator]();
          this.listening = listening;
          continue;
        }
        if (next.done) return;
        this.fire(next.value.keyId);
      }
    })().catch((error: unknown) => deps.logger.error("listening for revoked keys stopped", { error: String(error) }));
  }

  /** Calls `onRevoked` once when the key is revoked; the returned function stops watching. */
  watch(keyId: string, onRevoked: () => void): () => void {
    if (this.closed) return () => undefined;
    if (this.recent.has(keyId)) {
      queueMicrotask(onRevoked);
      return () => undefined;
    }
    let set = this.watchers.get(keyId);
    if (!set) this.watchers.set(keyId, (set = new Set()));
    set.add(onRevoked);
    return () => {
      set.delete(onRevoked);
      if (set.size === 0 && this.watchers.get(keyId) === set) this.watchers.delete(keyId);
    };
  }

  /** A promise settled when the key is revoked, and the function that stops waiting for it. */
  revoked(keyId: string): { promise: Promise<void>; stop: () => void } {
    let stop: () => void = () => undefined;
    const promise = new Promise<void>((resolve) => {
      stop = this.watch(keyId, resolve);
    });
    return { promise, stop };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.watchers.clear();
    this.recent.clear();
    await this.listening?.return?.();
  }

  private async sweep(): Promise<void> {
    const ids = [...this.watchers.keys()];
    if (ids.length === 0) return;
    try {
      const revoked = await this.deps.prisma.apiKey.findMany({ where: { id: { in: ids }, revokedAt: { not: null } }, select: { id: true } });
      for (const { id } of revoked) this.fire(id);
    } catch (error) {
      this.deps.logger.warn("checking open subscriptions' keys failed", { error: String(error) });
    }
  }

  private fire(keyId: string): void {
    const now = Date.now();
    for (const [id, at] of this.recent) if (now - at > REMEMBERED_MS) this.recent.delete(id);
    this.recent.set(keyId, now);
    const set = this.watchers.get(keyId);
    if (!set) return;
    this.watchers.delete(keyId);
    for (const onRevoked of set) onRevoked();
  }
}

/**
 * Ends a subscription made with a key when the key is revoked (GraphQL over SSE, and over a
 * WebSocket, which is closed as well): a last result carries an UNAUTHENTICATED error, then the
 * stream completes.
 */
export function useKeyRevocation(revocations: KeyRevocations): Plugin<GraphQLContext> {
  return {
    onSubscribe({ args }) {
      const keyId = (args.contextValue as GraphQLContext).actor?.keyId;
      if (!keyId) return;
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) setResult(untilRevoked(result, revocations.revoked(keyId)));
        },
      };
    },
  };
}

const STOPPED: unique symbol = Symbol("revoked");

/**
 * The source's results until the key is revoked, then one UNAUTHENTICATED error and the end. An
 * iterator, not an async generator: a generator waiting for its source's next event could not be
 * returned (a client unsubscribing) until that event came, and would hold the source open.
 */
function untilRevoked(source: AsyncIterable<ExecutionResult>, revoked: { promise: Promise<void>; stop: () => void }): AsyncIterableIterator<ExecutionResult> {
  const iterator = source[Symbol.asyncIterator]();
  const stopped = revoked.promise.then((): typeof STOPPED => STOPPED);
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    revoked.stop();
    await iterator.return?.();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (finished) return { done: true, value: undefined };
      const next = await Promise.race([iterator.next(), stopped]);
      if (next === STOPPED) {
        void finish().catch(() => undefined);
        return { done: false, value: { errors: [new GraphQLError(KEY_REVOKED_MESSAGE, { extensions: { code: "UNAUTHENTICATED" } })] } };
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
