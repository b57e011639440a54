// Servers measured from outside: Dossier (or a bare graphql-yoga baseline) bundled as `npm start`
// runs it, each in its own process (bench/server-process.ts), and a load generator in this one that
// reports throughput, p99, the server's CPU and SQL statements per request, and the CPU of the
// PostgreSQL server on this machine. Shared by bench/server-costs.ts and bench/rate-limits.ts.
import { type ChildProcess, fork } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { NODE_ENV, NODE_FLAGS } from "../scripts/build.mjs";
import { percentile } from "./support.js";

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Clients sending requests at once (the goals are set at 20), and trace writers on one trace. */
export const CLIENTS = 20;
export const WRITERS = 16;

export type Stats = { cpuMicros: number; statements: number; rss: number; maxRss: number };
export type TraceResult = { events: number; p99: number; cpuMicros: number; statements: number };
export type Server = {
  url: string;
  child: ChildProcess;
  stats(): Promise<Stats>;
  /** Has the server write trace events on the run's trace for SECONDS, WRITERS writers. */
  writeTrace(runId: string): Promise<TraceResult>;
  /** Refreshes the database's planner statistics, as autovacuum (PostgreSQL) or Dossier's own analyzer (PGlite) soon would. */
  analyze(): Promise<void>;
  stop(): Promise<void>;
};

/** A bench's server process flags: `npm start`'s, BENCH_NODE_FLAGS, and a CPU profile into BENCH_CPU_PROF. */
export function serverFlags(): string[] {
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const flags = process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? [];
  return [...NODE_FLAGS, ...flags, ...profile];
}

export async function serve(target: string, env: Record<string, string> = {}): Promise<Server> {
  // Bundled and flagged like `npm start`'s server: plain JavaScript, no TypeScript loader in the process.
  const child = fork("dist/bench/server-process.js", [target], {
    execArgv: serverFlags(),
    env: { ...NODE_ENV, ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
  return {
    url,
    child,
    stats: () => {
      const reply = replyOf<Stats>(child, "stats");
      child.send("stats");
      return reply;
    },
    analyze: async () => {
      const reply = replyOf(child, "analyzed");
      child.send("analyze");
      await reply;
    },
    writeTrace: (runId) => {
      const reply = replyOf<TraceResult>(child, "trace");
      child.send({ traceWriters: WRITERS, seconds: SECONDS, runId });
      return reply;
    },
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** The server's next IPC message of this kind (a trace load and stats requests may be in flight together). */
export function replyOf<T>(child: ChildProcess, kind: string): Promise<T> {
  return new Promise((resolve) => {
    const listener = (message: { kind?: string }) => {
      if (message.kind !== kind) return;
      child.off("message", listener);
      resolve(message as T);
    };
    child.on("message", listener);
  });
}

export async function post(url: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json()) as { data?: Record<string, any>; errors?: unknown };
  if (!response.ok || body.errors) throw new Error(`request failed: ${JSON.stringify(body)}`);
  return body.data!;
}

export type Measured = { perSecond: number; p99: number; cpuMs: number; statements: number; databaseCpuMs?: number };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Each figure's median over interleaved rounds. */
export const medianOf = (all: Measured[]): Measured => ({
  perSecond: median(all.map((m) => m.perSecond)),
  p99: median(all.map((m) => m.p99)),
  cpuMs: median(all.map((m) => m.cpuMs)),
  statements: median(all.map((m) => m.statements)),
  databaseCpuMs: all.every((m) => m.databaseCpuMs !== undefined) ? median(all.map((m) => m.databaseCpuMs!)) : undefined,
});

/** A table row of `m`'s figures, and how much time and CPU it costs against `base`. */
export function comparedRow(name: string, m: Measured, base: Measured): string[] {
  const databaseRatio = m.databaseCpuMs !== undefined && base.databaseCpuMs ? m.databaseCpuMs / base.databaseCpuMs : Number.NaN;
  return [
    name,
    `${m.perSecond.toFixed(0)}/s`,
    `${m.p99.toFixed(1)} ms`,
    `${m.cpuMs.toFixed(2)} ms`,
    m.databaseCpuMs !== undefined ? `${m.databaseCpuMs.toFixed(2)} ms` : "—",
    m.statements.toFixed(1),
    `${(base.perSecond / m.perSecond).toFixed(2)}× the time, ${(m.cpuMs / base.cpuMs).toFixed(2)}× server CPU, ${databaseRatio.toFixed(2)}× PostgreSQL CPU`,
  ];
}

/**
 * CPU time used so far by the PostgreSQL server on this machine, in ms: its live processes and the
 * backends that have exited (counted in the postmaster's children's time). Undefined when its
 * processes cannot be read (another machine, another user's /proc).
 */
export function postgresCpuMs(): number | undefined {
  const ticksPerSecond = 100; // USER_HZ on Linux
  // After the command's closing parenthesis: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
  const processes = new Map<string, string[]>();
  try {
    for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
      try {
        if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "postgres") continue;
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        processes.set(pid, stat.slice(stat.lastIndexOf(")") + 2).split(" "));
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    return undefined;
  }
  if (processes.size === 0) return undefined;
  let ticks = 0;
  for (const fields of processes.values()) {
    ticks += Number(fields[11]) + Number(fields[12]);
    // The postmaster (its parent is not PostgreSQL) holds the time of its backends that exited.
    if (!processes.has(fields[1]!)) ticks += Number(fields[13]) + Number(fields[14]);
  }
  return (ticks * 1000) / ticksPerSecond;
}

export type Request = { query: string; variables?: Record<string, unknown> };

/** CLIENTS loops sending one request after another for `seconds` (the next request made afresh each time when a function), with the server's CPU and statements per request. */
export async function measure(server: Server, request: Request | (() => Request), seconds = SECONDS): Promise<Measured> {
  const latencies: number[] = [];
  const run = async (seconds: number) => {
    const end = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < end) {
          const started = performance.now();
          const { query, variables } = typeof request === "function" ? request() : request;
          await post(server.url, query, variables);
          latencies.push(performance.now() - started);
        }
      }),
    );
  };
  await run(1); // warm-up
  latencies.length = 0;
  const before = await server.stats();
  const databaseBefore = postgresCpuMs();
  await run(seconds);
  const databaseAfter = postgresCpuMs();
  const after = await server.stats();
  const n = latencies.length;
  return {
    perSecond: n / seconds,
    p99: percentile(latencies, 99),
    cpuMs: (after.cpuMicros - before.cpuMicros) / 1000 / n,
    statements: (after.statements - before.statements) / n,
    databaseCpuMs: databaseBefore !== undefined && databaseAfter !== undefined ? (databaseAfter - databaseBefore) / n : undefined,
  };
}
