// Bundles Dossier's long-running processes — the server, the worker and the MCP server — from
// src/ into dist/, one file each with the npm packages left as imports. Run by ensure-setup, so
// `npm start` and `npm run worker` always run the current sources as plain JavaScript: no
// TypeScript loader in a server process (tsx costs about 60 MB of resident memory and start-up
// time). Takes well under a second.
//   node scripts/build.mjs [entry.ts …]   (default: the three processes)
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

export const PROCESSES = ["src/main.ts", "src/worker-main.ts", "src/mcp/main.ts"];

/** Writes dist/<entry>.js (e.g. dist/src/main.js) for each entry, with a source map beside it. */
export async function buildDossier(entries = PROCESSES) {
  await build({
    entryPoints: entries,
    outbase: ".",
    outdir: "dist",
    outExtension: { ".js": ".js" },
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "linked",
    logLevel: "warning",
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await buildDossier(process.argv.length > 2 ? process.argv.slice(2) : undefined);
