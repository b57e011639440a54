// BENCH_HOPS=1 for bench/worker-capacity.ts: where a streamed piece spends its time on its way from
// the model server to its subscriber, hop by hop, from the times piece-hops-probe.mjs notes in each
// process (the bench's own: the model server and the subscribers; the worker; the API), all on
// this machine's wall clock. And each process's event loop gaps of more than 40 ms: how much of
// them its main thread ran and how much it was runnable but waited for a CPU (another process had it).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { percentile, printTable } from "./support.js";

type Noted = {
  incoming: [string, number][];
  outgoing: [string, number][];
  seen: [string, number][];
  gaps: { from: number; to: number; onCpuMs: number; waitingMs: number }[];
};
type Probe = { seen(key: string): void; read(): Noted };

const dir = process.env.BENCH_HOPS ? mkdtempSync(path.join(tmpdir(), "piece-hops-")) : undefined;
if (dir) {
  process.env.PIECE_HOPS_DIR = dir;
  // By its URL: a JavaScript module without types.
  await import(new URL("./piece-hops-probe.mjs", import.meta.url).href);
}
const probe = (globalThis as { pieceHops?: Probe }).pieceHops;

/** The environment that loads the probe into a Dossier process named `role` ("api", "worker"); none without BENCH_HOPS. */
export function hopsEnv(role: string): Record<string, string> {
  if (!dir) return {};
  return { PIECE_HOPS_DIR: dir, PIECE_HOPS_ROLE: role, HOPS_IMPORT: `--import ${fileURLToPath(new URL("./piece-hops-probe.mjs", import.meta.url))}` };
}

/** A subscriber received piece `piece` of run `run` live. */
export function pieceSeen(run: number, piece: number): void {
  probe?.seen(`${run}:${piece}`);
}

/** Prints the hops of the pieces seen, once the API and the worker exited (each wrote what it noted). */
export function printPieceHops(): void {
  if (!dir || !probe) return;
  const bench = probe.read();
  const read = (role: string) => JSON.parse(readFileSync(path.join(dir, `${role}.json`), "utf8")) as Noted;
  const [worker, api] = [read("worker"), read("api")];
  rmSync(dir, { recursive: true, force: true });
  const times = [
    new Map(bench.outgoing),
    new Map(worker.incoming),
    new Map(worker.outgoing),
    new Map(api.incoming),
    new Map(api.outgoing),
    new Map(bench.incoming),
    new Map(bench.seen),
  ];
  const names = [
    "model wrote → worker read",
    "worker read → its Redis write",
    "Redis write → API read",
    "API read → its WebSocket write",
    "WebSocket write → bench read",
    "bench read → subscriber",
  ];
  // Only pieces every hop saw: one the API first had in a snapshot (its subscriber joined later) is not live.
  const keys = [...bench.seen].map(([key]) => key).filter((key) => times.every((at) => at.has(key)));
  const hop = (i: number, key: string) => times[i + 1]!.get(key)! - times[i]!.get(key)!;
  const late = keys.filter((key) => times[6]!.get(key)! - times[0]!.get(key)! > 100);
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  console.log(`\nA live piece's hops (${keys.length} pieces; ${late.length} later than 100 ms, counted under the hop that held each longest)`);
  printTable([
    ["hop", "p50", "p99", "max", "late pieces"],
    ...names.map((name, i) => {
      const values = keys.map((key) => hop(i, key));
      const longest = late.filter((key) => names.every((_, j) => hop(j, key) <= hop(i, key))).length;
      return [name, ms(percentile(values, 50)), ms(percentile(values, 99)), ms(Math.max(...values)), String(longest)];
    }),
  ]);
  const from = Math.min(...keys.map((key) => times[0]!.get(key)!));
  const to = Math.max(...keys.map((key) => times[6]!.get(key)!));
  console.log("\nEvent loop gaps over 40 ms while the pieces streamed: the main thread on a CPU, and runnable but waiting for one");
  printTable([
    ["process", "gaps", "longest", "in gaps", "on a CPU", "waiting for a CPU"],
    ...Object.entries({ api, worker, bench }).map(([name, noted]) => {
      const gaps = noted.gaps.filter((gap) => gap.to >= from && gap.from <= to);
      const sum = (of: (gap: Noted["gaps"][number]) => number) => ms(gaps.reduce((total, gap) => total + of(gap), 0));
      return [
        name,
        String(gaps.length),
        ms(Math.max(0, ...gaps.map((gap) => gap.to - gap.from))),
        sum((gap) => gap.to - gap.from),
        sum((gap) => gap.onCpuMs),
        sum((gap) => gap.waitingMs),
      ];
    }),
  ]);
}

/** Every process's CPU ticks so far, and the machine's busy ticks (/proc/stat: all but idle and iowait). */
function cpuTicks(): { machine: number; cores: number; byPid: Map<number, { ticks: number; comm: string }> } {
  const lines = readFileSync("/proc/stat", "utf8").split("\n");
  const fields = lines[0]!.split(/\s+/).slice(1).map(Number);
  const byPid = new Map<number, { ticks: number; comm: string }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      byPid.set(Number(entry), { ticks: Number(rest[11]) + Number(rest[12]), comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(") ")) });
    } catch {
      // The process ended meanwhile.
    }
  }
  return { machine: fields.reduce((sum, value) => sum + value, 0) - fields[3]! - fields[4]!, cores: lines.filter((line) => /^cpu\d/.test(line)).length, byPid };
}

/**
 * With BENCH_HOPS: who had this machine's CPUs while the runs streamed (from `start()` to the
 * returned function's call): the API, the worker, the bench, the database's backends (`pgPids`),
 * Redis, and every other process on the machine, which a shared machine's noise is.
 */
export function machineCpu(pids: { api: number; worker: number }): { stop(pgPids: () => Promise<number[]>): Promise<void> } {
  if (!dir) return { stop: async () => {} };
  const before = cpuTicks();
  const startedAt = performance.now();
  return {
    async stop(backends) {
      const after = cpuTicks();
      const seconds = (performance.now() - startedAt) / 1000;
      const pgPids = await backends();
      const used = (pid: number) => (after.byPid.get(pid)?.ticks ?? 0) - (before.byPid.get(pid)?.ticks ?? after.byPid.get(pid)?.ticks ?? 0);
      const redis = [...after.byPid].filter(([, { comm }]) => comm.startsWith("redis-server")).map(([pid]) => pid);
      const groups = { api: [pids.api], worker: [pids.worker], bench: [process.pid], "PostgreSQL (this database)": pgPids, Redis: redis };
      const ticks = Object.entries(groups).map(([name, list]) => [name, list.reduce((sum, pid) => sum + used(pid), 0)] as const);
      const rest = after.machine - before.machine - ticks.reduce((sum, [, value]) => sum + value, 0);
      // Ticks are 10 ms: a share of the machine's cores over the round.
      const share = (value: number) => `${((value * 10) / (seconds * 1000)).toFixed(2)} cores`;
      console.log(`\nCPU while the runs streamed (${seconds.toFixed(1)} s, ${after.cores} cores)`);
      printTable([["process", "CPU"], ...ticks.map(([name, value]) => [name, share(value)]), ["everything else on the machine", share(rest)]]);
    },
  };
}
