// A name server for a test process inside a network namespace of its own (network-namespace.ts),
// on 127.0.0.1:53, which that namespace's resolv.conf names: it answers names under ok.test with
// one public address (8.8.4.4) and never answers any other name.
import dgram from "node:dgram";

export type HangingNameServer = {
  /** Queries received, answered or not. */
  readonly queries: () => number;
  /** Names never answered, each with when it was first asked (performance.now()). */
  readonly hangingNames: Map<string, number>;
  close(): void;
};

/** The address every name under ok.test has. */
export const OK_TEST_ADDRESS = "8.8.4.4";

export async function startHangingNameServer(): Promise<HangingNameServer> {
  let queries = 0;
  const hangingNames = new Map<string, number>();
  const socket = dgram.createSocket("udp4");
  socket.on("message", (query, peer) => {
    queries += 1;
    const name = questionName(query);
    if (!name.endsWith(".ok.test")) {
      if (!hangingNames.has(name)) hangingNames.set(name, performance.now());
      return; // never answered
    }
    socket.send(answer(query), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(53, "127.0.0.1", resolve));
  return { queries: () => queries, hangingNames, close: () => socket.close() };
}

/** The question's name of a DNS query (no compression in questions). */
function questionName(query: Buffer): string {
  const labels: string[] = [];
  for (let at = 12; query[at]! > 0; at += query[at]! + 1) labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString());
  return labels.join(".").toLowerCase();
}

/** The answer to a query: one A record (OK_TEST_ADDRESS) for an A question, no record for any other. */
function answer(query: Buffer): Buffer {
  let end = 12;
  while (query[end]! > 0) end += query[end]! + 1;
  end += 5; // the root label, QTYPE, QCLASS
  const type = query.readUInt16BE(end - 4);
  const header = Buffer.from(query.subarray(0, 12));
  header.writeUInt16BE(0x8180, 2); // a response, recursion desired and available, no error
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(type === 1 ? 1 : 0, 6);
  header.writeUInt32BE(0, 8);
  const record = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...OK_TEST_ADDRESS.split(".").map(Number)]);
  return Buffer.concat([header, query.subarray(12, end), ...(type === 1 ? [record] : [])]);
}
