// Loaded into each process of bench/worker-capacity.ts with BENCH_HOPS=1 (NODE_OPTIONS=--import;
// the bench imports it itself): notes, on the wall clock, when each streamed piece "[run:piece] "
// first came off a socket into JavaScript and first went out on one, and each gap of more than
// 40 ms between the event loop's 10 ms ticks with how much of it the main thread spent on a CPU
// and how much runnable but waiting for one (/proc/thread-self/schedstat). A child process writes
// what it noted to $PIECE_HOPS_DIR/<role>.json when it exits; the bench reads its own from
// globalThis.pieceHops.
import { readFileSync, writeFileSync } from "node:fs";
import net from "node:net";

const dir = process.env.PIECE_HOPS_DIR;
if (dir) {
  const now = () => performance.timeOrigin + performance.now();
  const noted = { incoming: new Map(), outgoing: new Map(), seen: new Map(), gaps: [] };
  const note = (chunk, into) => {
    if (chunk == null || typeof chunk === "function") return;
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
    if (!text.includes("[")) return;
    const at = now();
    for (const [, run, piece] of text.matchAll(/\[(\d+):(\d+)\] /g)) if (!into.has(`${run}:${piece}`)) into.set(`${run}:${piece}`, at);
  };
  const { push, write } = net.Socket.prototype;
  net.Socket.prototype.push = function (chunk, encoding) {
    note(chunk, noted.incoming);
    return push.call(this, chunk, encoding);
  };
  net.Socket.prototype.write = function (chunk, ...rest) {
    note(chunk, noted.outgoing);
    return write.call(this, chunk, ...rest);
  };
  const schedstat = () => readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
  let last = { at: now(), sched: schedstat() };
  setInterval(() => {
    const at = now();
    const sched = schedstat();
    if (at - last.at > 40) noted.gaps.push({ from: last.at, to: at, onCpuMs: (sched[0] - last.sched[0]) / 1e6, waitingMs: (sched[1] - last.sched[1]) / 1e6 });
    last = { at, sched };
  }, 10).unref();
  const plain = () => ({ incoming: [...noted.incoming], outgoing: [...noted.outgoing], seen: [...noted.seen], gaps: noted.gaps });
  globalThis.pieceHops = { seen: (key) => noted.seen.has(key) || noted.seen.set(key, now()), read: plain };
  if (process.env.PIECE_HOPS_ROLE) process.on("exit", () => writeFileSync(`${dir}/${process.env.PIECE_HOPS_ROLE}.json`, JSON.stringify(plain())));
}
