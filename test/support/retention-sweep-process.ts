// A process that runs one trace retention sweep on a PostgreSQL database (DATABASE_URL) the way the
// embedded database does (rows purged at once, in small batches), at the fake time SWEEP_AT under
// a 7-day DELETE policy, printing "batch" after each batch: the crash tests kill it mid-purge.
import { openDatabase } from "../../src/db/open-database.js";
import { TraceRetention } from "../../src/domain/trace/retention/retention-service.js";

const db = await openDatabase({ kind: "postgres", url: process.env.DATABASE_URL! });
const retention = new TraceRetention({
  prisma: db.prisma,
  operator: { days: 7, mode: "DELETE" },
  now: () => new Date(process.env.SWEEP_AT!),
  instanceId: `crashing-${process.pid}`,
  sweep: { tracesPerBatch: Number(process.env.TRACES_PER_BATCH ?? 10), rowsPerBatch: Number(process.env.ROWS_PER_BATCH ?? 4), leaseMs: 1_000 },
});
console.log("sweeping");
const report = await retention.sweep({ afterBatch: async () => void console.log("batch") });
console.log(`swept ${JSON.stringify(report)}`);
await db.close();
