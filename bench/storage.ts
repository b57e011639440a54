// What a run stores: a 10-turn run whose tool returns 20,000 characters per turn, on PGlite and
// PostgreSQL, on its own and in a workspace with a selected material (whose context every request
// carries with the question). Prints the bytes of its conversation log and of its trace, and what
// the trace would hold if it copied what it refers to (every tool result and final reply in its
// event, every request whole in its model-call span) — the baseline, computed from the same run;
// then the stored bytes per trace: its rows of spans, events (without payloads) and replay log.
// Needs PostgreSQL (TEST_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432/postgres).
//   npm run bench:storage
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument, CreateWorkspaceDocument, PublishVersionDocument } from "../sdk/generated/graphql.js";
import { createApp } from "../src/compose/app.js";
import { type DatabaseTarget, openDatabase } from "../src/db/open-database.js";
import { fromStoredJson } from "../src/domain/text/stored-text.js";
import { recordedRequestOf, resolveRequest } from "../src/domain/trace/recorded-request.js";
import { createEventBus } from "../src/events/topics.js";
import { silentLogger } from "../src/logger.js";
import { reportReadingModel, reportTool, storedBytes } from "../test/support/long-tool-run.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { printTable } from "./support.js";

const TURNS = 10;
const RESULT_CHARS = 20_000;
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

/** A workspace with one published material, as admitRun's input for a run in it. */
async function inWorkspace(client: ReturnType<typeof createClient>) {
  const created = await client.request(CreateWorkspaceDocument, { input: { title: "Batteries", goal: "Map EU battery cell capacity for 2027" } });
  if (created.createWorkspace.__typename !== "CreateWorkspaceSuccess") throw new Error("the workspace was not created");
  const published = await client.request(PublishVersionDocument, { input: { title: "EU cell plants", content: "Plants and capacities. ".repeat(200) } });
  if (published.publishVersion.__typename !== "PublishVersionSuccess") throw new Error("the material was not published");
  const publicationId = published.publishVersion.version.publication.id;
  return { workspaceId: created.createWorkspace.workspace.id, materials: [{ publicationId, version: 1 }] };
}

/**
 * Stored bytes per trace, payloads excluded: the rows of its spans, of its events without their
 * payload column, and of its replay log, as PostgreSQL stores them (pg_column_size of each row).
 */
async function traceRowBytes(db: Awaited<ReturnType<typeof openDatabase>>, runId: string) {
  const [row] = await db.prisma.$queryRawUnsafe<{ spans: bigint; events: bigint; changes: bigint }[]>(
    `SELECT
       (SELECT coalesce(sum(pg_column_size(s.*)), 0) FROM span s WHERE s.trace_id = $1) AS spans,
       (SELECT coalesce(sum(pg_column_size(e.*) - pg_column_size(e.payload)), 0) FROM span_event e JOIN span s ON s.id = e.span_id WHERE s.trace_id = $1) AS events,
       (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM trace_change c WHERE c.trace_id = $1) AS changes`,
    runId,
  );
  return { spans: Number(row!.spans), events: Number(row!.events), changes: Number(row!.changes) };
}

async function measure(target: DatabaseTarget, workspace: boolean) {
  const db = await openDatabase(target);
  await db.migrate();
  const app = createApp({
    db,
    events: createEventBus(),
    logger: silentLogger,
    authRequired: false,
    runtime: {
      model: reportReadingModel(TURNS),
      sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bench-")),
      extraTools: [reportTool(RESULT_CHARS)],
    },
  });
  try {
    const client = createClient({
      url: "http://dossier.bench/graphql",
      fetch: (async (input: string, init?: RequestInit) => app.yoga.fetch(new Request(input, init))) as typeof fetch,
    });
    const admitted = await client.request(AdmitRunDocument, {
      input: { question: "Read the report", limits: { maxTurns: TURNS + 2, tokenBudget: 10_000_000 }, ...(workspace ? await inWorkspace(client) : {}) },
    });
    if (admitted.admitRun.__typename !== "AdmitRunSuccess") throw new Error(`admission failed: ${admitted.admitRun.__typename}`);
    const runId = Buffer.from(admitted.admitRun.run.id, "base64").toString().split(":")[1]!;
    for (;;) {
      const { status } = await db.prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } });
      if (status === "SUCCEEDED") break;
      if (status !== "QUEUED" && status !== "RUNNING") throw new Error(`the run ended ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const bytes = await storedBytes(db, runId);
    // The same trace with every reference replaced by what it refers to.
    const referenced = await db.prisma.spanEvent.findMany({ where: { span: { traceId: runId }, messageId: { not: null } }, select: { payloadSize: true } });
    const models = await db.prisma.span.findMany({ where: { traceId: runId, kind: "MODEL_CALL" }, select: { attributes: true } });
    let copies = bytes.trace + referenced.reduce((sum, event) => sum + event.payloadSize, 0);
    for (const { attributes } of models) {
      const recorded = recordedRequestOf(fromStoredJson(attributes)) ?? [];
      copies += Buffer.byteLength(JSON.stringify(await resolveRequest(db.prisma, recorded))) - Buffer.byteLength(JSON.stringify(recorded));
    }
    return { ...bytes, copies, rows: await traceRowBytes(db, runId) };
  } finally {
    await app.stop();
    await db.close();
  }
}

const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;
const rows = [["database", "run", "log", "trace", "stored ÷ log", "trace as copies (baseline)", "baseline stored ÷ log"]];
const perTrace = [["database", "run", "spans", "events (no payload)", "replay log", "stored bytes per trace", "÷ log (baseline)"]];
const targets: [string, () => Promise<{ target: DatabaseTarget; drop(): Promise<void> }>][] = [
  ["PGlite", async () => ({ target: { kind: "pglite" }, drop: async () => undefined })],
  [
    "PostgreSQL",
    async () => {
      const created = await createPostgresDatabaseAt(postgresUrl, "dossier_bench");
      return { target: { kind: "postgres", url: created.url }, drop: created.drop };
    },
  ],
];
for (const [name, open] of targets) {
  for (const workspace of [false, true]) {
    const { target, drop } = await open();
    try {
      const { log, trace, copies, rows: stored } = await measure(target, workspace);
      const run = workspace ? "in a workspace" : "alone";
      const total = stored.spans + stored.events + stored.changes;
      perTrace.push([name, run, kB(stored.spans), kB(stored.events), kB(stored.changes), kB(total), `${(total / log).toFixed(3)} ×`]);
      rows.push([name, run, kB(log), kB(trace), `${((log + trace) / log).toFixed(3)} ×`, kB(copies), `${((log + copies) / log).toFixed(2)} ×`]);
    } finally {
      await drop();
    }
  }
}
console.log(`\nStorage of a ${TURNS}-turn run with ${RESULT_CHARS.toLocaleString("en-US")}-character tool results (goal: stored ÷ log ≤ 1.25)`);
printTable(rows);
console.log(
  `\nStored bytes per trace of the same ${TURNS}-turn run: spans, events and replay log as stored rows, payloads excluded (baseline: its conversation log)`,
);
printTable(perTrace);
