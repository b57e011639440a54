// Child process of the trace-latency benchmark: opens N trace subscriptions to a server and
// reports, per update seq, when each subscriber received it (wall-clock ms, sub-ms precision).
// Running the subscribers outside the server's process keeps their cost off the server's CPU.
import { createClient } from "../sdk/client.js";

const [url, runId, countText] = process.argv.slice(2);
const count = Number(countText);
const now = () => performance.timeOrigin + performance.now();
const received = new Map<number, number[]>();
const clients = Array.from({ length: Math.ceil(count / 500) }, () => createClient({ url: url! }));
let started = 0;

const done = Array.from({ length: count }, async (_, i) => {
  let first = true;
  for await (const update of clients[i % clients.length]!.traceUpdates(runId!, { afterSeq: "1" })) {
    if (first) {
      first = false;
      if (++started === count) process.stdout.write("READY\n");
    }
    if (update.kind !== "EVENT_APPENDED") continue;
    const seq = Number(update.seq);
    (received.get(seq) ?? received.set(seq, []).get(seq)!).push(now());
  }
});
await Promise.all(done);
await Promise.all(clients.map((c) => c.close()));
// A pipe's writes are asynchronous: wait for this one before exiting.
await new Promise((resolve) => process.stdout.write(`${JSON.stringify(Object.fromEntries(received))}\n`, resolve));
process.exit(0);
