// A fault-injection TCP proxy on 127.0.0.1 for multi-process tests: one per Dossier process,
// between it and PostgreSQL (or Redis), so a test can fail one instance's link and no other's —
// without touching the machine's own services. Modes:
// - pass: bytes flow both ways;
// - delay(ms): every chunk waits ms before it is forwarded (order kept);
// - hang(): nothing is forwarded and nothing is closed — the sockets are paused, as when packets
//   are dropped; new connections are accepted and hang too. Nothing is lost: heal() resumes them;
// - reset(): every open connection is reset (RST towards the client), as after a failover;
// - refuse(): reset, and every new connection is reset at once, until heal() (an outage).
import net from "node:net";

type Link = { client: net.Socket; server: net.Socket };
type Mode = "pass" | "hang" | "refuse";

export type FaultProxy = {
  /** A URL like `target`'s with this proxy's host and port. */
  url: string;
  port: number;
  delay(ms: number): void;
  hang(): void;
  reset(): void;
  refuse(): void;
  /** Back to passing: hung connections resume with every byte they held. */
  heal(): void;
  /** Connections currently open through the proxy. */
  readonly connections: number;
  /** Connections reset at once because the proxy was refusing (a client's reconnection attempts). */
  readonly refused: number;
  /** Connections clients opened to the proxy, in any mode (the refused ones included). */
  readonly opened: number;
  close(): Promise<void>;
};

/** Starts a proxy to `target` (a postgresql:// or redis:// URL on 127.0.0.1) on a free port. */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  const links = new Set<Link>();
  let mode: Mode = "pass";
  let delayMs = 0;
  let refused = 0;
  let opened = 0;

  const forward = (from: net.Socket, to: net.Socket) => {
    // A chain per direction keeps the order of chunks under a delay.
    let chain = Promise.resolve();
    from.on("data", (chunk) => {
      if (delayMs === 0) {
        to.write(chunk);
        return;
      }
      const wait = delayMs;
      chain = chain.then(() => new Promise((resolve) => setTimeout(resolve, wait))).then(() => void (to.destroyed || to.write(chunk)));
    });
  };

  const server = net.createServer((client) => {
    opened += 1;
    if (mode === "refuse") {
      refused += 1;
      client.resetAndDestroy();
      return;
    }
    const link: Link = { client, server: net.connect(Number(upstream.port || 5432), upstream.hostname) };
    links.add(link);
    forward(link.client, link.server);
    forward(link.server, link.client);
    const end = () => {
      links.delete(link);
      if (!link.client.destroyed) link.client.resetAndDestroy();
      link.server.destroy();
    };
    link.client.on("error", end).on("close", end);
    link.server.on("error", end).on("close", end);
    if (mode === "hang") pause(link);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);

  const resetAll = () => {
    for (const link of [...links]) {
      links.delete(link);
      link.client.resetAndDestroy();
      link.server.destroy();
    }
  };
  return {
    url: url.toString(),
    port,
    delay(ms) {
      delayMs = ms;
    },
    hang() {
      mode = "hang";
      for (const link of links) pause(link);
    },
    reset: resetAll,
    refuse() {
      mode = "refuse";
      resetAll();
    },
    heal() {
      mode = "pass";
      delayMs = 0;
      for (const link of links) resume(link);
    },
    get connections() {
      return links.size;
    },
    get refused() {
      return refused;
    },
    get opened() {
      return opened;
    },
    async close() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function pause(link: Link): void {
  link.client.pause();
  link.server.pause();
}

function resume(link: Link): void {
  link.client.resume();
  link.server.resume();
}
