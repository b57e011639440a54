// A worker process's /metrics without METRICS_TOKEN answers only to the names the API answers to
// (ALLOWED_HOSTS; the loopback names by default): a page whose name was re-pointed at the worker's
// address (DNS rebinding) gets 421, not every tenant's counts. With the token (which a page cannot
// send), and for /health, any name is served: probes and scrapers address a pod by its IP. Every
// answer, refusals included, says no-store, Vary: Origin and nosniff, as the API's do.
import { type IncomingHttpHeaders, request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startWorkerProcess, type WorkerProcess } from "../../src/compose/worker-process.js";
import { loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/logger.js";
import { createMigratedPostgresDatabase } from "../support/databases.js";
import { markerModel } from "../support/marker-model.js";

type Scraped = { status: number; body: string; headers: IncomingHttpHeaders };

function scrape(port: number, host: string, { path = "/metrics", token }: { path?: string; token?: string } = {}): Promise<Scraped> {
  return new Promise((resolve, reject) => {
    const headers = { host, ...(token ? { authorization: `Bearer ${token}` } : {}) };
    const sent = request({ host: "127.0.0.1", port, path, headers }, (response) => {
      let body = "";
      response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body, headers: response.headers }));
    });
    sent.on("error", reject).end();
  });
}

const privateOf = ({ status, headers }: Scraped) => ({
  status,
  "cache-control": headers["cache-control"],
  vary: headers.vary,
  "x-content-type-options": headers["x-content-type-options"],
});
const PRIVATE = { "cache-control": "no-store", vary: "Origin", "x-content-type-options": "nosniff" };

describe("a worker process's /metrics", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("answers 421 to a rebound name and the counts to a loopback name", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const config = loadConfig({ DATABASE_URL: database.url, METRICS_PORT: "0" });
    const worker: WorkerProcess = await startWorkerProcess({ config, logger: silentLogger, model: markerModel("metrics", "marker_tool") });
    cleanups.push(() => worker.stop());
    const port = worker.metricsPort!;
    const rebound = await scrape(port, `evil.example:${port}`);
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain("dossier_");
    expect(privateOf(rebound)).toEqual({ status: 421, ...PRIVATE });
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
      const listed = await scrape(port, host);
      expect(privateOf(listed)).toEqual({ status: 200, ...PRIVATE });
      expect(listed.body).toContain("dossier_");
    }
    expect(privateOf(await scrape(port, `localhost:${port}`, { path: "/nothing-here" }))).toEqual({ status: 404, ...PRIVATE });
  });

  it("answers /health to any name, and /metrics with the token to a pod's address that ALLOWED_HOSTS does not list", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const token = "scrape-secret-0123456789";
    const config = loadConfig({ DATABASE_URL: database.url, METRICS_PORT: "0", METRICS_TOKEN: token, ALLOWED_HOSTS: "dossier.example.com" });
    const worker: WorkerProcess = await startWorkerProcess({ config, logger: silentLogger, model: markerModel("metrics", "marker_tool") });
    cleanups.push(() => worker.stop());
    const port = worker.metricsPort!;
    const pod = `10.1.2.3:${port}`;
    expect((await scrape(port, pod, { path: "/health" })).status).toBe(200);
    const scraped = await scrape(port, pod, { token });
    expect(scraped.status).toBe(200);
    expect(scraped.body).toContain("dossier_");
    expect(privateOf(await scrape(port, pod))).toEqual({ status: 401, ...PRIVATE });
  });
});
