// A process's own listeners on the event bus — a worker's stops, steering and wake-ups, the answers
// to runOutput's snapshot asks, revoked keys, MCP configuration changes, webhook wake-ups — live as
// long as the process. The process keeps serving after an unhandled rejection
// (compose/unhandled-rejections.ts), so a listening loop ended by an error (its subscription failed:
// the event target threw, a link gave up) would leave it serving deaf, with nothing but a log line
// to say so: a cancelled run's tool going on until the next lease renewal, a steering input missed,
// a queued run waiting for the next sweep. Such a loop is logged and subscribed again instead, after
// a short wait that doubles with each failure in a row; whoever listens is told it listens again
// (`onResumed`), and looks for what was announced meanwhile. An event its handler fails on is logged
// and the loop goes on with the next: one bad message does not end the listening.
import type { Logger } from "../logger.js";
import { MissedEventsError } from "./topics.js";

export type Listening = {
  /** Stops listening: the subscription ends, and no new one is made. */
  stop(): Promise<void>;
};

export type KeepListeningOptions<T> = {
  /** What is listened for, in the log's words ("run changes"). */
  what: string;
  subscribe: () => AsyncIterable<T>;
  onEvent: (event: T) => void;
  /** Called once subscribed again after a failure: announcements made in between were not heard. */
  onResumed?: () => void;
  logger: Logger;
  /** The wait before the first new subscription after a failure; it doubles up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
};

export function keepListening<T>({ what, subscribe, onEvent, onResumed, logger, retryMs = 100, maxRetryMs = 5_000 }: KeepListeningOptions<T>): Listening {
  let stopped = false;
  let current: AsyncIterator<T> | undefined;
  let endWait: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      endWait = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const safely = (step: () => void) => {
    try {
      step();
    } catch (error) {
      logger.error(`an event of ${what} could not be handled`, { error: String(error) });
    }
  };
  void (async () => {
    for (let failures = 0; !stopped; ) {
      let iterator: AsyncIterator<T> | undefined;
      try {
        iterator = subscribe()[Symbol.asyncIterator]();
        current = iterator;
        if (failures > 0 && onResumed) safely(onResumed);
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
          failures = 0;
          const event = next.value;
          safely(() => onEvent(event));
        }
        if (stopped) return;
        throw new Error("the subscription ended");
      } catch (error) {
        if (stopped) return;
        void Promise.resolve(iterator?.return?.()).catch(() => undefined);
        // A burst of more events than the bus keeps for one listener, or its link lost and back,
        // is not a failing subscription: listen again at once (what was missed is looked for by
        // onResumed), so an event right after — a cancel — is heard.
        if (error instanceof MissedEventsError) {
          logger.warn(`listening for ${what} may have missed events; listening again`, { error: String(error) });
          failures = Math.max(failures, 1);
          continue;
        }
        const waitMs = Math.min(retryMs * 2 ** failures, maxRetryMs);
        failures += 1;
        logger.error(`listening for ${what} stopped; listening again in ${waitMs} ms`, { error: String(error), failures });
        await pause(waitMs);
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      endWait?.();
      await Promise.resolve(current?.return?.()).catch(() => undefined);
    },
  };
}
