// A promise that rejects with no handler (a stray rejection in one request's or one run's code)
// would end the process under Node.js's default, and with it every principal's streams and runs
// in flight. The server and worker processes log it instead, with its stack, count it in
// dossier_unhandled_rejections_total, and keep serving. An uncaught exception still ends the
// process (Node.js's default): it leaves a synchronous step half done, where a rejection only
// leaves one promise's result unread.
import type { Logger } from "../logger.js";
import type { DossierMetrics } from "../metrics/dossier-metrics.js";

export type UnhandledRejections = {
  /** Counts rejections into the process's metrics from now on, with those seen before they existed. */
  countInto(metrics: Pick<DossierMetrics, "countUnhandledRejection">): void;
};

/** Installs the process-wide handler (once per process: the entry points call it). */
export function keepServingOnUnhandledRejections(logger: Logger, target: NodeJS.EventEmitter = process): UnhandledRejections {
  let counted: Pick<DossierMetrics, "countUnhandledRejection"> | undefined;
  let before = 0;
  target.on("unhandledRejection", (reason: unknown) => {
    const error = reason instanceof Error ? { error: reason.message, stack: reason.stack } : { error: String(reason) };
    logger.error("a promise rejected with no handler; the process keeps serving", error);
    if (counted) counted.countUnhandledRejection();
    else before += 1;
  });
  return {
    countInto(metrics) {
      counted = metrics;
      for (; before > 0; before -= 1) metrics.countUnhandledRejection();
    },
  };
}
