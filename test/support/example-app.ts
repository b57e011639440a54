// The example app (examples/app) as a browser gets it: built by Vite into a temporary folder and
// served as static files from a loopback port of its own — another origin than the Dossier server,
// which must list it in CORS_ORIGINS.
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { build } from "vite";
import { projectRoot } from "./processes.js";

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml" };

/**
 * Builds the app into `outDir` (offline; about a second) for the Dossier at `serverUrl`, given as
 * a person building it would: VITE_DOSSIER_URL in the env file Vite reads.
 */
export async function buildExampleApp(outDir: string, serverUrl: string): Promise<void> {
  const envDir = mkdtempSync(path.join(tmpdir(), "dossier-example-app-env-"));
  writeFileSync(path.join(envDir, ".env"), `VITE_DOSSIER_URL=${serverUrl}\n`);
  await build({ configFile: path.join(projectRoot, "examples/app/vite.config.ts"), envDir, logLevel: "error", build: { outDir, emptyOutDir: true } });
}

export type StaticSite = { origin: string; close(): Promise<void> };

/** Serves a folder's files (index.html for "/") on 127.0.0.1. */
export async function serveStatic(dir: string): Promise<StaticSite> {
  const server = createServer(async (req, res) => {
    const pathname = new URL(req.url ?? "/", "http://localhost").pathname;
    const file = path.join(dir, pathname === "/" ? "index.html" : path.normalize(pathname));
    if (!file.startsWith(dir)) return void res.writeHead(403).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
