import { createRequire } from "node:module";
import { defineConfig } from "vitest/config";

const require = createRequire(import.meta.url);

// Files that wait on a clock with a margin another file's load could eat: leases that expire,
// frozen or killed processes, a deadline of a second or a comparison of two timings. They run
// after the rest, one at a time.
const alone = [
  "test/runtime/crash-recovery.test.ts",
  "test/runtime/fenced-attempts.test.ts",
  "test/runtime/lease-renewals.test.ts",
  "test/runtime/worker-processes.test.ts",
  "test/runtime/database-faults.test.ts",
  "test/runtime/fair-share-processes.test.ts",
  "test/server/webhook-fairness.test.ts",
  "test/server/subscription-quota.test.ts",
  "test/server/slow-clients.test.ts",
  "test/graphql/cancel-queued-streams.test.ts",
  // Seeds 100,000 runs and compares insert times with and without the filter indexes.
  "test/db/run-filter-plans.test.ts",
];

// Files that wait on processes, a browser or live streams more than on the CPU, with margins of
// several seconds: after the shared files, two at a time (a busy shared phase, with two workers on
// two cores, could still push a page past its wait), so one file's waiting is the other's CPU.
const twoAtATime = [
  "test/runtime/model-back-pressure.test.ts",
  "test/server/webhook-hanging-endpoint.test.ts",
  "test/runtime/conversation-runs.test.ts",
  "test/runtime/tool-approval-processes.test.ts",
  "test/runtime/pause-runs.test.ts",
  "test/runtime/hostile-output.test.ts",
  "test/runtime/stop-modes.test.ts",
  "test/runtime/mcp-listing-deadline.test.ts",
  "test/runtime/principal-name-lookups.test.ts",
  "test/server/webhook-crash.test.ts",
  "test/graphql/access-tokens.test.ts",
  "test/server/*-browser.test.ts",
  "test/examples/*-browser.test.ts",
  "test/server/trace-viewer*.test.ts",
  // The SDK against a live server (a page's store, the built package's subscription); its tests
  // against scripted responses (sse-transport, verify-webhook) wait on no clock and run with the rest.
  "test/sdk/run-store.test.ts",
  "test/sdk/sdk-package.test.ts",
  "test/e2e/**/*.test.ts",
];

// Files that assert on state one process shares between every embedded database in it (whether
// the event loop turned since the last statement): a database another file left open and busy
// would change what they see, so each runs in a process of its own. So does a file that mocks a
// module or measures what the process's heap retains (another file's leftovers would count).
const ownProcess = [
  "test/db/pglite-turns.test.ts",
  "test/server/document-cache.test.ts",
  "test/server/refused-requests.test.ts",
  // Counts the sandbox ledger's disk calls through a mock of node:fs/promises.
  "test/runtime/sandbox-ledger-costs.test.ts",
  // Counts the digests of MCP tools through a mock of node:crypto.
  "test/runtime/mcp-tool-definitions.test.ts",
];

export default defineConfig({
  resolve: {
    // graphql@16 has no "exports" map: Node loads its CommonJS build for every dependency,
    // while Vite would pick the "module" (ESM) build for our sources. Two copies of graphql
    // cannot share a schema, so our sources get the same build as everything else.
    alias: [{ find: /^graphql$/, replacement: require.resolve("graphql") }],
  },
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    projects: [
      {
        extends: true,
        // Most files wait on PostgreSQL, PGlite or a child process more than on the CPU: two at a
        // time finish sooner than one at a time on a two-core machine.
        // Not isolated: each of the two workers runs its files one after the other in one process,
        // so the server's modules are imported, and PGlite's WebAssembly compiled, once per worker
        // instead of once per file (12 small files: 98–103 s of CPU instead of 152–161 s). Every file
        // opens and closes its own databases, apps and servers; none mocks a module or changes
        // process.env, and the two that fake timers restore them after each test.
        test: {
          name: "shared",
          include: ["test/**/*.test.ts"],
          exclude: [...alone, ...twoAtATime, ...ownProcess],
          maxWorkers: 2,
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        // Not isolated either, for the same reason: each worker runs its files one after the other
        // in one process, and none of them mocks a module, changes process.env or fakes timers.
        test: { name: "two at a time", include: twoAtATime, maxWorkers: 2, isolate: false, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        // Beside the two-at-a-time files: each of these needs a process to itself, not a quiet machine.
        test: { name: "own process", include: ownProcess, maxWorkers: 2, isolate: true, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: "alone", include: alone, maxWorkers: 1, isolate: false, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
