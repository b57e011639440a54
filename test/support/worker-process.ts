// A Dossier process for multi-process tests (crash recovery, several instances): the real app and worker over DATA_DIR or DATABASE_URL,
// answering each question with a scripted model that first asks for `slow_tool`, then — once it
// sees that call's result or its repair note — answers `Finished "<question>" by <pid>.`. `slow_tool` appends "start <pid>"
// and "end <pid>" lines to MARKER_FILE, so a test can see which process ran it and when.
// SLOW_TOOL_MS sets how long `slow_tool` takes (3 s by default); SLOW_TOOL_MS_FILE, when set, names a
// file holding that duration, read at each call, so a test can shorten the calls its processes
// make from some moment on (those already running keep their duration).
// TOOL_APPROVALS (as the server reads it) holds the calls it names for a person's decision, for
// TOOL_APPROVAL_TIMEOUT_SECONDS; ECHO_TOOL_RESULT=true ends each answer with the tool result the
// model was given.
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createApp } from "../../src/compose/app.js";
import { openDatabase } from "../../src/db/open-database.js";
import { readDataDirCopy } from "../../src/db/pglite-copy.js";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import { createEventBus } from "../../src/events/topics.js";
import { createLogger } from "../../src/logger.js";
import { startHttpServer } from "../../src/server/http-server.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { markerModel } from "./marker-model.js";

const marker = process.env.MARKER_FILE!;
// PGLITE_TEMPLATE: a migrated embedded database (the test run's template dump) that an empty
// DATA_DIR starts from, instead of creating and migrating one (seconds of CPU); a DATA_DIR that
// already holds a database (a restart) opens as it is.
function embedded(dataDir: string, template: string | undefined) {
  const fresh = template !== undefined && !existsSync(path.join(dataDir, "pg", "PG_VERSION"));
  return { kind: "pglite" as const, dataDir, loadDataDir: fresh ? readDataDirCopy(readFileSync(template), { analysed: true }) : undefined };
}
const db = await openDatabase(
  process.env.DATABASE_URL ? { kind: "postgres", url: process.env.DATABASE_URL } : embedded(process.env.DATA_DIR!, process.env.PGLITE_TEMPLATE),
);
await db.migrate();

const slowToolMs = () => Number(process.env.SLOW_TOOL_MS_FILE ? readFileSync(process.env.SLOW_TOOL_MS_FILE, "utf8") : (process.env.SLOW_TOOL_MS ?? 3_000));

const slowTool: Tool = {
  schema: { name: "slow_tool", description: "takes a while", parameters: { type: "object" } },
  execute: async (_args, { signal }) => {
    appendFileSync(marker, `start ${process.pid}\n`);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, slowToolMs());
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      });
    });
    appendFileSync(marker, `end ${process.pid}\n`);
    return "slow result";
  },
};

// STREAM_MS: the answer streams word by word over that long (live output tests).
const model = markerModel("crash", "slow_tool", {
  streamMs: process.env.STREAM_MS ? Number(process.env.STREAM_MS) : undefined,
  echoToolResult: process.env.ECHO_TOOL_RESULT === "true",
});

const events = process.env.REDIS_URL ? (await createRedisEventBus(process.env.REDIS_URL)).events : createEventBus();
const app = createApp({
  db,
  events,
  logger: createLogger("info"),
  authRequired: false,
  runtime:
    process.env.IN_PROCESS_WORKER === "false"
      ? undefined
      : {
          model,
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-crash-")),
          extraTools: [slowTool],
          leaseMs: Number(process.env.LEASE_MS ?? 3_000),
          approvals: process.env.TOOL_APPROVALS
            ? {
                rules: JSON.parse(process.env.TOOL_APPROVALS),
                timeoutSeconds: process.env.TOOL_APPROVAL_TIMEOUT_SECONDS ? Number(process.env.TOOL_APPROVAL_TIMEOUT_SECONDS) : undefined,
              }
            : undefined,
        },
});
const server = await startHttpServer({ app, port: 0, host: "127.0.0.1" });
process.stderr.write(`${JSON.stringify({ url: server.url, pid: process.pid })}\n`);
