// A worker process for multi-process tests: Dossier's real worker process (src/compose/worker-process.ts,
// configured from the environment like `npm run worker`) with a scripted model that first calls
// `marker_tool`, then answers `Finished "<question>" by <pid>.` once it sees that call's result or its repair
// note. `marker_tool` appends "start <runId> <pid>" and "end <runId> <pid>" lines to MARKER_FILE
// (waiting SLOW_TOOL_MS in between), so a test can count how often each run was executed, where.
// With EVENTS_FILE, the tool also appends a JSON line per start, end and abort it received, with
// this process's time (`at`, ms since the epoch), so a test can order events across processes.
// ABORT_STOP_MS: once aborted, the tool takes that long to stop (a side effect wound down), then
// appends a "stopped" event.
import { appendFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { markerModel } from "./marker-model.js";
import { startWorkerProcess } from "../../src/compose/worker-process.js";

const marker = process.env.MARKER_FILE!;
const record = (event: "start" | "end" | "abort" | "stopped", runId: string) => {
  if (process.env.EVENTS_FILE) appendFileSync(process.env.EVENTS_FILE, `${JSON.stringify({ event, runId, pid: process.pid, at: Date.now() })}\n`);
};
const markerTool: Tool = {
  schema: { name: "marker_tool", description: "records that it ran, then takes a while", parameters: { type: "object" } },
  execute: async (_args, { runId, signal }) => {
    appendFileSync(marker, `start ${runId} ${process.pid}\n`);
    record("start", runId);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, Number(process.env.SLOW_TOOL_MS ?? 50));
      signal.addEventListener("abort", () => {
        record("abort", runId);
        clearTimeout(timer);
        const stopMs = Number(process.env.ABORT_STOP_MS ?? 0);
        if (stopMs === 0) return reject(new Error("aborted"));
        setTimeout(() => {
          record("stopped", runId);
          reject(new Error("aborted"));
        }, stopMs);
      });
    });
    appendFileSync(marker, `end ${runId} ${process.pid}\n`);
    record("end", runId);
    return "marked";
  },
};

const model = markerModel("queue-worker", "marker_tool");

const config = loadConfig({ ...process.env, DATA_DIR: mkdtempSync(path.join(tmpdir(), "dossier-queue-worker-")) });
const logger = createLogger(config.logLevel);
const worker = await startWorkerProcess({ config, logger, model, extraTools: [markerTool] });
const stop = () => void worker.stop().then(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
process.stderr.write(`${JSON.stringify({ worker: worker.workerId, pid: process.pid, metricsPort: worker.metricsPort ?? null })}\n`);
