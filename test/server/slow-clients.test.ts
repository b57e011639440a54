// Slow-body connections (issue 36): one client address holds at most MAX_CONNECTIONS_PER_CLIENT
// open connections, and a request whose body trickles in is answered 408 and closed after
// REQUEST_TIMEOUT_MS — while other requests are served as usual.
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp | undefined;
const opened: Socket[] = [];
afterEach(async () => {
  for (const socket of opened.splice(0)) socket.destroy();
  await t?.close();
  t = undefined;
});

/** A raw connection that sends a request's headers and the start of a 1,000-byte body, then stalls. */
async function stalled(port: number): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect(port, "127.0.0.1");
  opened.push(socket);
  await once(socket, "connect");
  let answer = "";
  socket.on("data", (chunk: Buffer) => (answer += chunk.toString("utf8")));
  const closed = new Promise<string>((resolve) => socket.once("close", () => resolve(answer)));
  socket.write("POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
  return { socket, closed };
}

describe("slow clients", () => {
  it("caps one address's connections and times out a body that trickles in; other requests are served meanwhile", async () => {
    t = await startTestApp("pglite", { listen: true, connections: { maxPerClient: 3, requestTimeoutMs: 1_000 } });
    const port = t.server!.port;
    const slow = [await stalled(port), await stalled(port), await stalled(port)];
    const started = Date.now();

    // A fourth connection from the same address is closed at once, answered nothing.
    const fourth = await stalled(port);
    expect(await fourth.closed).toBe("");
    expect(Date.now() - started).toBeLessThan(1_000);

    // The slow ones are answered 408 and closed once their time is up.
    const answers = await Promise.all(slow.map((s) => s.closed));
    const after = Date.now() - started;
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(after).toBeGreaterThanOrEqual(900);
    expect(after).toBeLessThan(5_000);

    // Their places are free again.
    const response = await fetch(t.server!.url, { method: "POST", headers: { "content-type": "application/json" }, body: '{"query":"{ __typename }"}' });
    expect(await response.json()).toEqual({ data: { __typename: "Query" } });
  });
});
