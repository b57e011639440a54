// The resident memory of an idle `npm start` on a new embedded data folder (issue 43, goal 6),
// read from /proc for the server's own node process (npm and sh are its parents). The first start
// initialises and migrates the folder in a child process of its own (initdb, whose peak is of
// several hundred MB, and the migrations), so neither is what the server holds. Linux only (/proc).
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Spawned, spawnBuilt, spawnShell } from "../support/processes.js";

/**
 * What an idle server may hold. The goal is 150 MB; measured 145–148 MB on a loaded machine since
 * the migrations of a new folder run in initdb's child process (149–150 MB before; 151–153 MB
 * before that, 159–161 MB before one malloc arena, one copy of @graphql-tools/utils 12 and ICU's
 * data released; docs/performance.md, Memory), so the bound keeps what was won with room for a
 * busier machine, without yet asserting the goal.
 */
const IDLE_RSS_LIMIT_MB = 160;
/** initdb in this process peaked at about 760 MB; in a child the server's own peak is that of its start. */
const PEAK_RSS_LIMIT_MB = 400;

const running: Spawned[] = [];
const folders: string[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) {
    for (const pid of descendants(p.child.pid!)) process.kill(pid, "SIGKILL");
    p.child.kill("SIGKILL");
    await p.exited;
  }
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The processes below `pid`, found by their parent in /proc/<pid>/stat. */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const [child, of] of parents) {
      if (of !== parent) continue;
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/**
 * Loaded before the server (node --require): reports each locale-aware call, the first of which
 * maps ICU's data from the node binary, about 8 MB resident for the process's life, and each
 * package loaded that a server never uses (graphql-jit's JSON-schema serialiser and the ajv it
 * brings, about 1.4 MB of heap).
 */
const REPORT_UNUSED = `
const Module = require("node:module");
const load = Module._load;
Module._load = function (request, ...rest) {
  if (/^(fast-json-stringify|ajv)(\\/|$)/.test(request)) process.stderr.write("unused package loaded: " + request + "\\n");
  return load.call(this, request, ...rest);
};
const report = (name) => process.stderr.write("locale-aware call: " + name + "\\n");
for (const key of ["DateTimeFormat", "NumberFormat", "Collator", "PluralRules", "Segmenter", "RelativeTimeFormat", "ListFormat"]) {
  const original = Intl[key];
  Intl[key] = new Proxy(original, { construct: (target, args) => (report("Intl." + key), Reflect.construct(target, args)) });
}
for (const [owner, key] of [[Number.prototype, "toLocaleString"], [Date.prototype, "toLocaleString"], [Date.prototype, "toLocaleDateString"], [Date.prototype, "toLocaleTimeString"], [String.prototype, "localeCompare"]]) {
  const original = owner[key];
  owner[key] = function (...args) { report(key); return original.apply(this, args); };
}
`;

const statusKb = (pid: number, field: string) => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`${field}:\\s+(\\d+) kB`))![1]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(existsSync("/proc/self/status"))("an idle `npm start` on the embedded database", () => {
  it("holds less than the bound on a new data folder, and initdb's peak stays out of the server", { timeout: 120_000 }, async () => {
    const DATA_DIR = mkdtempSync(path.join(tmpdir(), "dossier-memory-"));
    folders.push(DATA_DIR);
    const npm = spawnShell("npm start", { env: { PORT: "0", HOST: "127.0.0.1", DATA_DIR } });
    running.push(npm);
    const line = await npm.waitForOutput(/"url":"[^"]+"/, 110_000);
    const url = JSON.parse(`{${line}}`).url as string;
    // The node process itself: npm runs the script through `sh -c`, whose command line names main.js too.
    const server = descendants(npm.child.pid!).find((pid) => {
      const [program, ...args] = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return path.basename(program ?? "") === "node" && args.includes("dist/src/main.js");
    });
    expect(server).toBeDefined();
    // It answers: a started server, not one still opening.
    const ready = await fetch(new URL("/ready", url));
    expect(ready.status).toBe(200);
    // Idle: a few seconds after start, the median of five readings a second apart.
    await sleep(4_000);
    const readings: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      readings.push(statusKb(server!, "VmRSS") / 1024);
      await sleep(1_000);
    }
    const idle = readings.sort((a, b) => a - b)[2]!;
    const peak = statusKb(server!, "VmHWM") / 1024;
    expect(idle, `idle RSS ${idle.toFixed(0)} MB (readings ${readings.map((r) => r.toFixed(0)).join(", ")})`).toBeLessThan(IDLE_RSS_LIMIT_MB);
    expect(peak, `peak RSS ${peak.toFixed(0)} MB`).toBeLessThan(PEAK_RSS_LIMIT_MB);
  });

  it("starts and answers without loading ICU's locale data or packages it never uses", { timeout: 120_000 }, async () => {
    const DATA_DIR = mkdtempSync(path.join(tmpdir(), "dossier-memory-"));
    folders.push(DATA_DIR);
    const preload = path.join(DATA_DIR, "report-icu.cjs");
    writeFileSync(preload, REPORT_UNUSED);
    const server = spawnBuilt("src/main.ts", { env: { PORT: "0", HOST: "127.0.0.1", DATA_DIR, NODE_OPTIONS: `--require ${preload}` } });
    running.push(server);
    const line = await server.waitForOutput(/"url":"[^"]+"/, 110_000);
    const url = JSON.parse(`{${line}}`).url as string;
    expect((await fetch(new URL("/ready", url))).status).toBe(200);
    const schema = await fetch(new URL("/graphql", url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ __schema { types { name description fields { name description } } } }" }),
    });
    // The descriptions still group their numbers as before: "exactly up to 10,000".
    expect(await schema.text()).toMatch(/\d,\d{3}/);
    expect(server.output()).not.toContain("locale-aware call");
    expect(server.output()).not.toContain("unused package loaded");
  });
});

describe("the GraphQL packages a server loads", () => {
  // graphql-yoga's executor, schema and merge packages each came with their own copy of
  // @graphql-tools/utils 12 (the project's top level held 11, for graphql-yoga and codegen): three
  // copies of the same code in every server's heap. Declared at the top level, 12 is shared.
  it("share one copy of @graphql-tools/utils 12", () => {
    const copies = new Set(
      ["@graphql-tools/executor", "@graphql-tools/schema", "@graphql-tools/merge"].map((name) => {
        const from = createRequire(import.meta.url).resolve(`${name}/package.json`);
        return realpathSync(createRequire(from).resolve("@graphql-tools/utils/package.json"));
      }),
    );
    expect(copies.size).toBe(1);
  });
});
