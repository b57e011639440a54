// A promise rejecting with no handler ends neither the server process nor a worker process
// (Node.js's default would, and with it every principal's streams or runs in flight): it is logged
// at error level with its stack, counted in dossier_unhandled_rejections_total, and the process
// keeps serving.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createMigratedPostgresDatabase } from "../support/databases.js";
import { killAll, projectRoot, type Spawned, spawnBuilt } from "../support/processes.js";

const running: Spawned[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Starts a built entry point whose SIGUSR2 makes a promise reject with no handler (test/support/stray-rejection.mjs). */
function spawnWithStrayRejection(entry: string, env: Record<string, string>): Spawned {
  const spawned = spawnBuilt(entry, { env, nodeFlags: ["--import", path.join(projectRoot, "test/support/stray-rejection.mjs")] });
  running.push(spawned);
  return spawned;
}

/** Makes the process's promise reject, and reads the line it logged. */
async function strayRejection(spawned: Spawned): Promise<unknown> {
  spawned.child.kill("SIGUSR2");
  return JSON.parse(await spawned.waitForOutput(/\{[^\n]*a stray rejection nobody handles[^\n]*\}/, 30_000));
}

const logged = { level: "error", error: "a stray rejection nobody handles", stack: expect.stringContaining("stray-rejection.mjs") };

describe("unhandled rejections", () => {
  it("are logged with their stack and counted, and the server keeps answering", async () => {
    const DATA_DIR = mkdtempSync(path.join(tmpdir(), "dossier-rejections-"));
    cleanups.push(() => rmSync(DATA_DIR, { recursive: true, force: true }));
    const server = spawnWithStrayRejection("src/main.ts", { PORT: "0", DATA_DIR });
    const url = (JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url;

    expect(await strayRejection(server)).toMatchObject(logged);
    const answer = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ data: { __typename: "Query" } });
    expect(await (await fetch(new URL("/metrics", url))).text()).toMatch(/^dossier_unhandled_rejections_total 1$/m);
  }, 90_000);

  it("are logged with their stack and counted by a worker process, which keeps running", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const worker = spawnWithStrayRejection("src/worker-main.ts", { DATABASE_URL: database.url, METRICS_PORT: "0" });
    const started = JSON.parse(await worker.waitForOutput(/\{[^\n]*"message":"worker started"[^\n]*\}/, 60_000)) as { metricsPort: number };

    expect(await strayRejection(worker)).toMatchObject(logged);
    const metrics = await fetch(`http://127.0.0.1:${started.metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^dossier_unhandled_rejections_total 1$/m);
  }, 90_000);
});
