// A process that holds an embedded database (DATA_DIR) and runs one trace retention sweep on it,
// in small batches, at the fake time SWEEP_AT under a 7-day DELETE policy. It prints "delete" as
// each of the purge's DELETE statements is done: the crash test kills it mid-batch.
import { openDatabase } from "../../src/db/open-database.js";
import { TraceRetention } from "../../src/domain/trace/retention/retention-service.js";

const db = await openDatabase(
  { kind: "pglite", dataDir: process.env.DATA_DIR! },
  { onQuery: (sql) => void (/^\s*DELETE FROM (trace_change|span)/.test(sql) && console.log("delete")) },
);
const retention = new TraceRetention({
  prisma: db.prisma,
  operator: { days: 7, mode: "DELETE" },
  now: () => new Date(process.env.SWEEP_AT!),
  instanceId: `crashing-${process.pid}`,
  sweep: { tracesPerBatch: 10, rowsPerBatch: 3, leaseMs: 1_000 },
});
console.log("sweeping");
const report = await retention.sweep();
console.log(`swept ${JSON.stringify(report)}`);
await db.close();
