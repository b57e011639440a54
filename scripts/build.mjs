// Bundles Dossier's long-running processes — the server, the worker and the MCP server — from
// src/ into dist/, one file each with the npm packages left as imports. Run by ensure-setup, so
// `npm start` and `npm run worker` always run the current sources as plain JavaScript: no
// TypeScript loader in a server process (tsx costs about 60 MB of resident memory and start-up
// time). Takes well under a second.
//   node scripts/build.mjs [entry.ts …]   (default: the three processes)
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { spreadParameterizationSchema } from "./prisma-param-graph.mjs";

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
 * - --max-semi-space-size=4: the young generation (two semi-spaces) grows to 32 MB under V8's
 *   default and stays committed when the server is idle. At 1 MB an idle embedded server held
 *   about 10 MB less than at 4, but the run path paid for it: `bench:run-path`, pairs in one
 *   session, server CPU per turn on the embedded database 55.8 ms at 1 MB, 46.9 ms at 4 MB,
 *   43.2 ms at V8's default (docs/performance.md, Memory).
 * - --liftoff-only: Prisma's query compiler is WebAssembly; V8 also compiles its hot functions a
 *   second time, optimised, which costs about 50 MB resident and no CPU measurable per request,
 *   because Prisma caches query plans and runs the compiler once per query shape.
 */
export const NODE_FLAGS = ["--max-old-space-size=1024", "--max-semi-space-size=4", "--liftoff-only"];

/**
 * The environment those processes start with (package.json sets it before the flags; a test
 * keeps the two equal). GLIBC_TUNABLES: glibc's malloc keeps memory freed at the top of its heap
 * for reuse, and raises that threshold as large blocks come and go (PGlite's and Prisma's
 * WebAssembly compilation at start-up frees tens of MB): an idle embedded server kept about 20 MB
 * of freed memory resident (the [heap] mapping, 35 MB → 16 MB). A fixed trim threshold of 128 KB
 * (glibc's own default, no longer raised) hands it back. arena_max=1: every thread that allocates
 * while another holds the main arena's lock (V8's compiler and collector threads, libuv's thread
 * pool) otherwise gets an arena of its own, up to 8 per core, and each keeps what it once held
 * (five arenas held about 7 MB in an idle embedded server); with one arena an idle server held
 * 4-5 MB less, and the server CPU per read in `bench:server` stayed within the machine's noise
 * (docs/performance.md). Other C libraries ignore the variable.
 */
export const NODE_ENV = { GLIBC_TUNABLES: "glibc.malloc.trim_threshold=131072:glibc.malloc.arena_max=1" };

/** The command line that runs a bundle as `npm start` does: its environment, node, its flags. */
export function nodeCommand(bundle) {
  const env = Object.entries(NODE_ENV).map(([name, value]) => `${name}=${value}`);
  return [...env, "node", ...NODE_FLAGS, bundle].join(" ");
}

/**
 * Prisma's query compiler comes as a module holding its WebAssembly as base64 text (4.4 MB),
 * which Prisma reads once, to compile it. A module's text and its exports live as long as the
 * process: about 9 MB of heap for good. In the bundles that module reads the text from the same
 * file when Prisma asks for it, and nothing keeps it after (Prisma passes it to Buffer.from, which
 * takes a string from an object's valueOf).
 */
const compilerText = {
  name: "prisma-compiler-text",
  setup(build) {
    build.onResolve({ filter: /query_compiler_fast_bg\.postgresql\.wasm-base64\.mjs$/ }, (args) => ({ path: args.path, namespace: "prisma-compiler-text" }));
    build.onLoad({ filter: /.*/, namespace: "prisma-compiler-text" }, (args) => ({
      contents: `import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const file = createRequire(import.meta.url).resolve(${JSON.stringify(args.path)});
export const wasm = {
  valueOf() {
    const text = readFileSync(file, "latin1");
    return text.slice(text.indexOf('"') + 1, text.lastIndexOf('"'));
  },
};
`,
      loader: "js",
      resolveDir: ".",
    }));
  },
};

/**
 * Prisma's parameterization graph (in the generated client) laid out so that V8 keeps its nodes'
 * edges in hash tables instead of arrays padded to about 1,100 slots each: 18 → 3 MB of heap for
 * the server's life (prisma-param-graph.mjs). The same graph, the same lookups; a generated client
 * of another shape is bundled as it is, with a warning.
 */
export const paramGraph = {
  name: "prisma-param-graph",
  setup(build) {
    build.onLoad({ filter: /[\\/]generated[\\/]prisma[\\/]internal[\\/]class\.ts$/ }, (args) => {
      const { source, skipped } = spreadParameterizationSchema(readFileSync(args.path, "utf8"));
      return { contents: source, loader: "ts", warnings: skipped ? [{ text: `Prisma's parameterization graph left as generated: ${skipped}` }] : [] };
    });
  },
};

/**
 * graphql-scalars: Dossier uses two of its scalars, and the package's one entry point loads all of
 * them (1.2 MB of heap for the server's life). Bundled instead of imported, only the two are kept
 * (the package declares no side effects); its own imports, graphql among them, stay imports.
 */
const twoScalars = {
  name: "graphql-scalars-used",
  setup(build) {
    build.onResolve({ filter: /^graphql-scalars$/ }, () => {
      const manifest = createRequire(import.meta.url).resolve("graphql-scalars/package.json");
      const entry = JSON.parse(readFileSync(manifest, "utf8")).exports["."].import.default;
      return { path: path.join(path.dirname(manifest), entry), sideEffects: false };
    });
  },
};

/**
 * graphql-jit loads fast-json-stringify at start, and with it ajv, ajv-formats, fast-uri and
 * json-schema-ref-resolver (about 1.4 MB of heap for the server's life), for an option Dossier
 * never sets (`customJSONSerializer`: a response serialised by a compiled JSON schema). Bundled
 * instead of imported, graphql-jit gets a fast-json-stringify that says so if that option is ever
 * set; its other requires (graphql among them) stay requires of the installed packages, through
 * the `require` the bundles' banner makes.
 */
const jitWithoutJsonSchemas = {
  name: "graphql-jit-without-fast-json-stringify",
  setup(build) {
    build.onResolve({ filter: /^graphql-jit$/ }, () => ({ path: createRequire(import.meta.url).resolve("graphql-jit") }));
    build.onResolve({ filter: /^fast-json-stringify$/ }, (args) =>
      /[\\/]graphql-jit[\\/]/.test(args.importer) ? { path: "fast-json-stringify", namespace: "no-json-schemas" } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "no-json-schemas" }, () => ({
      contents: `module.exports = () => { throw new Error("graphql-jit's customJSONSerializer is not available in Dossier's bundles (scripts/build.mjs)"); };`,
      loader: "js",
    }));
  },
};

/** Lets a bundled CommonJS module require an installed package (esbuild leaves those as require calls). */
const REQUIRE_BANNER = `import { createRequire as __dossierRequire } from "node:module"; const require = __dossierRequire(import.meta.url);`;

/**
 * V8 keeps a module's source for the process's life, as one-byte text when every character is
 * ASCII and two-byte text otherwise: a few dashes and ellipses in comments and strings made the
 * server's 1.6 MB bundle 3.3 MB of heap. Each is written as its \u escape, which means the same
 * character in a string, a template, a regular expression or a script served from a raw template
 * (the trace viewer's), and is only text in a comment.
 */
function asciiOnly(file) {
  const text = readFileSync(file, "utf8");
  const ascii = text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (ascii !== text) writeFileSync(file, ascii);
}

/** Writes dist/<entry>.js (e.g. dist/src/main.js) for each entry, with a source map beside it. */
export async function buildDossier(entries = PROCESSES) {
  const result = await build({
    entryPoints: entries,
    outbase: ".",
    outdir: "dist",
    outExtension: { ".js": ".js" },
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    // A module imported with import() becomes a chunk of its own, loaded when it is first
    // imported: the OpenAI adapter and the openai package only when a model is configured.
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    target: "node20",
    sourcemap: "linked",
    plugins: [compilerText, paramGraph, twoScalars, jitWithoutJsonSchemas],
    banner: { js: REQUIRE_BANNER },
    logLevel: "warning",
    metafile: true,
  });
  for (const file of Object.keys(result.metafile.outputs)) if (file.endsWith(".js")) asciiOnly(file);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await buildDossier(process.argv.length > 2 ? process.argv.slice(2) : undefined);
