// What the benchmarks share: a Dossier server on a database, percentiles, and table output.
import { createApp } from "../src/compose/app.js";
import { type DatabaseTarget, openDatabase } from "../src/db/open-database.js";
import { createEventBus, type EventBus } from "../src/events/topics.js";
import { silentLogger } from "../src/logger.js";
import { startHttpServer } from "../src/server/http-server.js";

export type BenchServer = { app: ReturnType<typeof createApp>; server: Awaited<ReturnType<typeof startHttpServer>>; close(): Promise<void> };

/** A listening Dossier server without a worker, on a migrated database; `onClose` runs after it stops. */
export async function startBenchServer(
  target: DatabaseTarget,
  events: EventBus = createEventBus(),
  onClose: () => Promise<void> = async () => undefined,
): Promise<BenchServer> {
  const db = await openDatabase(target);
  await db.migrate();
  // The admission scenarios queue far more runs of one principal than MAX_QUEUED_RUNS_PER_PRINCIPAL's default: admitted, not refused.
  const app = createApp({ db, events, logger: silentLogger, authRequired: false, traceSubscriberBuffer: 100_000, maxQueuedRunsPerPrincipal: 1e9 });
  const server = await startHttpServer({ app, port: 0, host: "127.0.0.1", maxSubscriptionsPerConnection: 2_000 });
  return {
    app,
    server,
    async close() {
      await server.close();
      await app.stop();
      await db.close();
      await onClose();
    },
  };
}

/** The p-th percentile (0–100) of the values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Prints rows (the first is the header) as aligned columns. */
export function printTable(rows: readonly string[][]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const row of rows) console.log(row.map((cell, c) => cell.padEnd(widths[c]!)).join("  "));
}

/** The typical workspace read: the workspace, its current goal and a page of 20 linked runs. */
export const TYPICAL_WORKSPACE_READ = /* GraphQL */ `
  query Typical($id: ID!) {
    workspace(id: $id) {
      id title status
      goal { version statement }
      links(first: 20) { edges { node { kind target { ... on Run { id status question createdAt } } } } }
    }
  }
`;
