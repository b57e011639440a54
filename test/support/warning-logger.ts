// Loggers that keep what they are told at one level, for tests that check a fallback says so
// once (warnings) or that nothing went wrong (errors).
import type { LogFields, Logger } from "../../src/logger.js";

type Kept = [string, LogFields | undefined][];

function keeping(level: "warn" | "error"): { logger: Logger; kept: Kept } {
  const kept: Kept = [];
  const logger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
  logger[level] = (message, fields) => void kept.push([message, fields]);
  return { logger, kept };
}

export function warningLogger(): { logger: Logger; warnings: Kept } {
  const { logger, kept } = keeping("warn");
  return { logger, warnings: kept };
}

export function errorLogger(): { logger: Logger; errors: Kept } {
  const { logger, kept } = keeping("error");
  return { logger, errors: kept };
}
