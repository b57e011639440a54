// A process that expires the trace weeks of a PostgreSQL database (DATABASE_URL) once, under the
// operator's retention TRACE_RETENTION_DAYS (mode DELETE), and prints what it did: the crash tests
// kill it mid-way and check that the next sweep completes.
import { openDatabase } from "../../src/db/open-database.js";
import { expireWeeks } from "../../src/domain/trace/retention/week-expiry.js";
import { retentionWeekRules } from "../../src/domain/trace/retention/week-expiry-rules.js";

const db = await openDatabase({ kind: "postgres", url: process.env.DATABASE_URL! });
console.log("expiring");
const report = await db.withSession((session) => expireWeeks(session, retentionWeekRules({ days: Number(process.env.TRACE_RETENTION_DAYS), mode: "DELETE" })));
console.log(`expired ${JSON.stringify(report)}`);
await db.close();
