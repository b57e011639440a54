// A server for the benchmarks, in its own process so that its CPU time is its own: Dossier on
// the database named by argv[2] ("pglite" or a PostgreSQL URL), or with "baseline" a bare
// graphql-yoga `{ hello }`. Prints `listening <url>`; answers the IPC message "stats" with the
// CPU time used, the SQL statements sent and the resident memory (now and at most) so far, "analyze" by refreshing the
// planner's statistics, and { traceWriters } by writing trace events
// as a run's recorder does: that many writers on one trace, one event after another, for a while.
// BENCH_RATE_LIMITS=process or redis turns request rate limits on, with buckets in this process or
// in the Redis of REDIS_URL, at a rate no benchmark reaches: every request takes its token.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createSchema, createYoga } from "graphql-yoga";
import { createApp } from "../src/compose/app.js";
import { openDatabase } from "../src/db/open-database.js";
import { createEventBus } from "../src/events/topics.js";
import { silentLogger } from "../src/logger.js";
import { startHttpServer } from "../src/server/http-server.js";
import { PrismaTraceRecorder } from "../src/trace/record/prisma-trace-recorder.js";
import { RedisTokenBuckets } from "../src/server/redis-token-buckets.js";
import { InProcessTokenBuckets, type TokenBuckets } from "../src/server/rate-limit.js";
import { percentile } from "./support.js";

const target = process.argv[2] ?? "pglite";
let statements = 0;
let app: ReturnType<typeof createApp> | undefined;

async function start(): Promise<string> {
  if (target === "baseline") {
    const yoga = createYoga({
      schema: createSchema({ typeDefs: "type Query { hello: String! }", resolvers: { Query: { hello: () => "world" } } }),
      logging: false,
    });
    const server = createServer(yoga);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  }
  const db = await openDatabase(target === "pglite" ? { kind: "pglite" } : { kind: "postgres", url: target }, { onQuery: () => void (statements += 1) });
  await db.migrate();
  // The admission scenarios queue far more runs of one principal than MAX_QUEUED_RUNS_PER_PRINCIPAL's default: admitted, not refused.
  app = createApp({ db, events: createEventBus(), logger: silentLogger, authRequired: false, rateLimits: await rateLimits(), maxQueuedRunsPerPrincipal: 1e9 });
  return (await startHttpServer({ app, port: 0, host: "127.0.0.1" })).url;
}

/** Buckets that never run dry in a benchmark, so that what is measured is the cost of taking a token. */
async function rateLimits(): Promise<TokenBuckets | undefined> {
  const settings = { perMinute: 1e12, burst: 1e12 };
  const where = process.env.BENCH_RATE_LIMITS;
  if (where === "process") return new InProcessTokenBuckets(settings);
  if (where === "redis") return RedisTokenBuckets.connect(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", settings);
  return undefined;
}

type TraceLoad = { traceWriters: number; seconds: number; runId: string };

/** `traceWriters` loops each recording 200-character events on the run's trace, one after another. */
async function writeTrace({ traceWriters, seconds, runId }: TraceLoad) {
  const recorder = new PrismaTraceRecorder({ prisma: app!.db.prisma, events: app!.events });
  const span = await recorder.startSpan({ traceId: await recorder.traceFor(runId), kind: "RUN", name: "bench" });
  const latencies: number[] = [];
  const write = async (until: number) => {
    while (performance.now() < until) {
      const started = performance.now();
      await recorder.event(span, "THINKING", "x".repeat(200));
      latencies.push(performance.now() - started);
    }
  };
  const loops = (until: number) => Promise.all(Array.from({ length: traceWriters }, () => write(until)));
  await loops(performance.now() + 1_000); // warm-up
  latencies.length = 0;
  const cpuBefore = process.cpuUsage();
  const statementsBefore = statements;
  await loops(performance.now() + seconds * 1_000);
  const cpu = process.cpuUsage(cpuBefore);
  await recorder.endTrace(span.traceId);
  return { events: latencies.length, p99: percentile(latencies, 99), cpuMicros: cpu.user + cpu.system, statements: statements - statementsBefore };
}

process.on("message", (message) => {
  if (message === "stats") {
    const cpu = process.cpuUsage();
    // Resident memory now, and the most it has been since the process started.
    process.send!({
      kind: "stats",
      cpuMicros: cpu.user + cpu.system,
      statements,
      rss: process.memoryUsage().rss,
      maxRss: process.resourceUsage().maxRSS * 1024,
    });
  } else if (message === "analyze") {
    void app!.db.prisma.$executeRawUnsafe("ANALYZE").then(() => process.send!({ kind: "analyzed" }));
  } else if (typeof message === "object" && message !== null && "traceWriters" in message) {
    void writeTrace(message as TraceLoad).then((result) => process.send!({ kind: "trace", ...result }));
  }
});
process.stdout.write(`listening ${await start()}\n`);
// An orderly exit, so that `node --cpu-prof` writes its profile when the benchmark stops the server.
process.on("SIGTERM", () => process.exit(0));
