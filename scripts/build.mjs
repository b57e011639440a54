// Bundles Dossier's long-running processes — the server, the worker and the MCP server — from
// src/ into dist/, one file each with the npm packages left as imports. Run by ensure-setup, so
// `npm start` and `npm run worker` always run the current sources as plain JavaScript: no
// TypeScript loader in a server process (tsx costs about 60 MB of resident memory and start-up
// time). Takes well under a second.
//   node scripts/build.mjs [entry.ts …]   (default: the three processes)
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

export const PROCESSES = ["src/main.ts", "src/worker-main.ts", "src/mcp/main.ts"];

/**
 * The Node.js flags `npm start` and `npm run worker` run those bundles with (package.json says
 * them again; test/server/startup.test.ts keeps the two equal), each measured with
 * `npm run bench:server` (README, Performance):
 * - --max-old-space-size=1024: V8 lets a heap grow by a factor that rises with its limit (about
 *   4 GB by default here); under load most of a server's heap is garbage of finished requests,
 *   so a lower limit means earlier collections — the peak under load fell from about 390 MB to
 *   about 220 MB for the same CPU. Live data is about 55 MB; a server that needs more than 1 GB
 *   is run with its own flag (see the README).
 * - --liftoff-only: Prisma's query compiler is WebAssembly; V8 also compiles its hot functions a
 *   second time, optimised, which costs about 50 MB resident and no CPU measurable per request,
 *   because Prisma caches query plans and runs the compiler once per query shape.
 */
export const NODE_FLAGS = ["--max-old-space-size=1024", "--liftoff-only"];

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
