// Runs Dossier's own entry points as separate processes, as an operator would.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { NODE_ENV, NODE_FLAGS } from "../../scripts/build.mjs";

export const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

export type Spawned = {
  child: ChildProcess;
  output(): string;
  /** Resolves when the output matches, rejects when the process exits first or on timeout. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

type SpawnOptions = {
  env?: Record<string, string>;
  args?: string[];
  /** Node's own flags, given before the entry (spawnBuilt), e.g. --cpu-prof. */
  nodeFlags?: string[];
};

/**
 * The test processes of test/support that tests start many times over: the test run's global
 * setup bundles them into dist/ with Dossier's own processes, so each starts as plain JavaScript
 * (about 2 CPU-seconds less per start than through tsx, which compiles every module it loads).
 */
export const TEST_PROCESSES = [
  "test/support/worker-process.ts",
  "test/support/queue-worker.ts",
  "test/support/mcp-test-server.ts",
  "test/support/pglite-sweep-process.ts",
  "test/support/retention-sweep-process.ts",
  "test/support/week-expiry-process.ts",
];

/** A TypeScript script: one of TEST_PROCESSES from its bundle, any other run from its source. */
export function spawnTs(script: string, options: SpawnOptions = {}): Spawned {
  if (TEST_PROCESSES.includes(script)) {
    // An embedded database a test process creates starts from the run's migrated template (worker-process.ts).
    return spawnNode([bundleOf(script)], { ...options, env: { PGLITE_TEMPLATE: inject("pgliteTemplateDump"), ...options.env } });
  }
  return spawnNode(["--import", "tsx", path.join(projectRoot, script)], options);
}

/** Where scripts/build.mjs writes the bundle of `script` (e.g. "src/main.ts" → dist/src/main.js). */
function bundleOf(script: string): string {
  return path.join(projectRoot, "dist", script.replace(/\.ts$/, ".js"));
}

/**
 * One of Dossier's processes as `npm start` and `npm run worker` run it: the bundle
 * scripts/build.mjs wrote to dist/ (the test run's global setup builds it), e.g. "src/main.ts".
 */
export function spawnBuilt(entry: string, options: SpawnOptions = {}): Spawned {
  return spawnNode([...NODE_FLAGS, ...(options.nodeFlags ?? []), bundleOf(entry)], { ...options, env: { ...NODE_ENV, ...options.env } });
}

/** A shell command line, run by sh in the project folder; `exec` makes the last command the process itself. */
export function spawnShell(command: string, options: Omit<SpawnOptions, "args"> = {}): Spawned {
  // `exec` takes no variable assignments before its command: `env` sets them and becomes the command.
  const execed = command.replace(/^((?:\w+=\S*\s+)+)/, "env $1");
  return spawnProgram("sh", ["-c", `exec ${execed}`], options);
}

function spawnNode(nodeArgs: string[], { env = {}, args = [] }: SpawnOptions): Spawned {
  // One process (no tsx or npm wrapper), so a signal or a kill reaches Dossier itself.
  return spawnProgram(process.execPath, [...nodeArgs, ...args], { env });
}

function spawnProgram(file: string, programArgs: string[], { env = {} }: Omit<SpawnOptions, "args">): Spawned {
  const child = spawn(file, programArgs, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const listeners = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    output += chunk.toString("utf8");
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exited,
    waitForOutput(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match) {
            cleanup();
            resolve(match[0]);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output:\n${output}`));
        }, timeoutMs);
        const onExit = () => {
          check();
          cleanup();
          reject(new Error(`process exited before printing ${pattern}; output:\n${output}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off("exit", onExit);
        };
        listeners.add(check);
        child.once("exit", onExit);
        check();
      });
    },
  };
}

/** Kills (SIGKILL) every process of the list still running and empties the list. */
export async function killAll(processes: Spawned[]): Promise<void> {
  for (const p of processes.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.child.kill("SIGKILL");
      await p.exited;
    }
  }
}

/** The lines a test process appended to a marker file so far (none before the first). */
export function markerLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8").trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/** WebSocket subscriptions a running server has registered, from its /metrics (`url`: any URL of the server). */
export async function wsSubscriptions(url: string): Promise<number> {
  const metrics = await (await fetch(new URL("/metrics", url))).text();
  return Number(/^dossier_subscriptions_open\{transport="ws"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
}
