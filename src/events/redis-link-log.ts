// A Redis outage in Dossier's own logs: the clients of one use of Redis (the event bus, the rate
// limits) log once through the logger when their link is lost, and once when it is back, instead
// of ioredis printing an unhandled error line on stderr at every reconnection attempt.
import type { Redis } from "ioredis";
import type { Logger } from "../logger.js";

/** Where the client connects, for messages: host:port (or the socket's path), never the URL's password. */
export function redisAddress(client: Redis): string {
  const { host, port, path } = client.options;
  return path || `${host}:${port}`;
}

/**
 * Listens for the clients' errors: the first one while all of them are connected logs a warning
 * naming `use` (e.g. "event bus"), the address and the error; those that follow while ioredis
 * retries are not logged. Once every client that failed is ready again, one info says so.
 */
export function logRedisLink(use: string, clients: Redis[], logger: Logger): void {
  const down = new Set<Redis>();
  for (const client of clients) {
    const redis = redisAddress(client);
    client.on("error", (error: Error) => {
      if (down.size === 0) logger.warn(`Redis for the ${use} at ${redis} is unreachable; retrying: ${error.message}`, { use, redis, error: error.message });
      down.add(client);
    });
    client.on("ready", () => {
      if (!down.delete(client) || down.size > 0) return;
      logger.info(`Redis for the ${use} at ${redis} is reachable again`, { use, redis });
    });
  }
}
