// A loopback proxy in front of PostgreSQL that counts what one process sends it: the statements it
// executes (a simple query, or an extended-protocol Execute) and its round trips (a simple query, or
// a Sync: the point where the client waits for the server's answer), with each statement's text.
// It reads the client's side of the wire only, and forwards every byte as it came.
import { createConnection, createServer, type Server, type Socket } from "node:net";

export type WireCounts = { statements: number; roundTrips: number; texts: Map<string, number> };

export type WireCounter = { url: string; counts(): WireCounts; close(): Promise<void> };

/** A proxy to the PostgreSQL server of `databaseUrl`; its `url` is that URL through the proxy. */
export async function startWireCounter(databaseUrl: string): Promise<WireCounter> {
  const target = new URL(databaseUrl);
  const totals: WireCounts = { statements: 0, roundTrips: 0, texts: new Map() };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    sockets.add(client).add(upstream);
    const parse = clientParser(totals);
    client.on("data", (chunk: Buffer) => {
      parse(chunk);
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    counts: () => ({ statements: totals.statements, roundTrips: totals.roundTrips, texts: new Map(totals.texts) }),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The parser of one connection's client messages: the startup message, then typed messages. */
function clientParser(totals: WireCounts): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let started = false;
  /** Each prepared statement's text by name ("" the unnamed one), and each portal's statement. */
  const statements = new Map<string, string>();
  const portals = new Map<string, string>();
  const cString = (buffer: Buffer, at: number): [string, number] => {
    const end = buffer.indexOf(0, at);
    return [buffer.toString("utf8", at, end), end + 1];
  };
  const count = (text: string) => {
    totals.statements += 1;
    const key = text.replace(/\s+/g, " ").trim().slice(0, 160);
    totals.texts.set(key, (totals.texts.get(key) ?? 0) + 1);
  };
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    for (;;) {
      if (!started) {
        if (pending.length < 8) return;
        const length = pending.readInt32BE(0);
        if (pending.length < length) return;
        const code = pending.readInt32BE(4);
        pending = pending.subarray(length);
        // An SSL or GSS request is answered before the real startup message.
        if (code !== 80877103 && code !== 80877104) started = true;
        continue;
      }
      if (pending.length < 5) return;
      const type = String.fromCharCode(pending[0]!);
      const length = pending.readInt32BE(1);
      if (pending.length < 1 + length) return;
      const body = pending.subarray(5, 1 + length);
      pending = pending.subarray(1 + length);
      if (type === "Q") {
        totals.roundTrips += 1;
        count(cString(body, 0)[0]);
      } else if (type === "P") {
        const [name, at] = cString(body, 0);
        statements.set(name, cString(body, at)[0]);
      } else if (type === "B") {
        const [portal, at] = cString(body, 0);
        portals.set(portal, statements.get(cString(body, at)[0]) ?? "?");
      } else if (type === "E") count(portals.get(cString(body, 0)[0]) ?? "?");
      else if (type === "S") totals.roundTrips += 1;
    }
  };
}

/** What was counted between two readings. */
export function countsBetween(before: WireCounts, after: WireCounts): WireCounts {
  const texts = new Map<string, number>();
  for (const [text, n] of after.texts) {
    const added = n - (before.texts.get(text) ?? 0);
    if (added > 0) texts.set(text, added);
  }
  return { statements: after.statements - before.statements, roundTrips: after.roundTrips - before.roundTrips, texts };
}
