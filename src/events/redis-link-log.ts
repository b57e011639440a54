// The link to Redis of one use of it (the event bus, the rate limits). An outage in Dossier's own
// logs: its clients log once through the logger when their link is lost, and once when it is
// back, instead of ioredis printing an unhandled error line on stderr at every reconnection
// attempt. Their connecting at start, which ends within a bound whatever the link does, and
// their closing, which ends that link for good whatever its state.
import type { Redis } from "ioredis";
import type { Logger } from "../logger.js";

/** Redis could not be reached at start (REDIS_URL): the process does not start. */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/** Where the client connects, for messages: host:port (or the socket's path), never the URL's password. */
export function redisAddress(client: Redis): string {
  const { host, port, path } = client.options;
  return path || `${host}:${port}`;
}

/** How long a use of Redis may take to connect at start (TCP, then Redis's answer to the first commands). */
export const REDIS_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Connects the clients (made with lazyConnect), all ready within `timeoutMs` or none: Redis
 * refusing the connection fails at once, and a link that connects but never answers (Redis hung,
 * or packets dropped past the TCP handshake: ioredis's own connect timeout ends with the
 * handshake, and its first commands have none) fails once `timeoutMs` has passed. On failure every
 * client is disconnected for good — no reconnection is tried — and the error says why.
 */
export async function connectWithin(clients: Redis[], timeoutMs = REDIS_CONNECT_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.all(clients.map((client) => client.connect())), timedOut]);
  } catch (error) {
    for (const client of clients) client.disconnect();
    throw error;
  } finally {
    clearTimeout(timer);
  }
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

/**
 * Closes the client for good, within about `graceMs` whatever the state of its link: a connected
 * client sends QUIT and gives Redis `graceMs` to answer what was sent before it; then, or at once
 * while Redis is unreachable, the connection is dropped and no reconnection is tried again. QUIT
 * alone would leave ioredis retrying: with Redis unreachable it waits in the client's offline
 * queue for a reconnection (and is given up on after a few attempts while the attempts go on), or
 * is refused at once by a client without that queue, the attempts going on too; and on a link
 * that hangs its answer never comes, so a process shutting down would never end. A client closed
 * between two reconnection attempts stays "reconnecting" in ioredis's eyes, with what was queued
 * for it left unsettled (nothing in Dossier waits on those): no attempt is made again.
 */
export async function closeRedisClient(client: Redis, graceMs = 1_000): Promise<void> {
  if (client.status === "ready") {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    const quit = client.quit().then(
      () => undefined,
      () => undefined,
    );
    await Promise.race([quit, grace]);
    clearTimeout(timer);
  }
  // Stops a pending reconnection and ends the socket, whatever was queued for it.
  if (client.status !== "end") client.disconnect();
}
