// A logger that keeps what it is told to warn about, for tests that check a fallback says so once.
import type { LogFields, Logger } from "../../src/logger.js";

export function warningLogger(): { logger: Logger; warnings: [string, LogFields | undefined][] } {
  const warnings: [string, LogFields | undefined][] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    error: () => undefined,
    warn: (message, fields) => void warnings.push([message, fields]),
  };
  return { logger, warnings };
}
