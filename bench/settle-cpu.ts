// What a run's end costs the worker's thread: the CPU time of `settleAttempt` for a run that
// answered (its fence's check and one statement), with the transaction through the Prisma client
// (an interactive transaction) and straight through the driver (attempt-fence.ts writeDirect),
// interleaved in pairs on the same database so the machine's load falls on both alike. Also the
// statements each sends. On PostgreSQL (TEST_POSTGRES_URL, default the local server) and the
// embedded database. RUNS pairs (default 300).
import { createEventBus } from "../src/events/topics.js";
import { openDatabase } from "../src/db/open-database.js";
import { PrismaAttemptFence, type AttemptFence } from "../src/domain/runs/attempt-fence.js";
import { PrismaRunState } from "../src/domain/runs/run-state.js";
import { settleStepsOf } from "../src/runtime/runtime.js";
import { PrismaSpillStore } from "../src/runtime/adapters/prisma-spill-store.js";
import { createBareRun } from "../test/support/bare-run.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { percentile, printTable } from "./support.js";

const RUNS = Number(process.env.RUNS ?? 300);
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const CLAIMANT = {
  workerId: "bench-worker",
  leaseMs: 60_000,
  leaseMarginMs: 1_000,
  maxRunningPerPrincipal: 1_000,
  liveness: async () => true,
  describeRun: (run: { id: string }) => ({ name: `run ${run.id}`, attributes: {} }),
  modelLabel: "bench",
};

type Way = "prisma" | "driver";

async function measure(backend: "postgres" | "pglite"): Promise<string[][]> {
  const scratch = backend === "postgres" ? await createPostgresDatabaseAt(postgresUrl, "dossier_bench_settle") : null;
  const counting = { on: false, statements: [] as string[] };
  const db = await openDatabase(scratch ? { kind: "postgres", url: scratch.url } : { kind: "pglite" }, {
    onQuery: (sql) => counting.on && counting.statements.push(sql),
  });
  try {
    await db.migrate();
    const prisma = db.prisma;
    const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    // A run outside any workspace with nothing pending: its steps write in the statement, their own code never runs.
    const steps = settleStepsOf({} as never, new PrismaSpillStore(prisma));
    const cpu: Record<Way, number[]> = { prisma: [], driver: [] };
    const wall: Record<Way, number[]> = { prisma: [], driver: [] };
    const sent: Record<Way, number> = { prisma: 0, driver: 0 };
    const settleOne = async (way: Way, count: boolean) => {
      const { runId } = await createBareRun(prisma);
      const claimed = await runs.claim(CLAIMANT, runId);
      if (!claimed) throw new Error("not claimed");
      const full = new PrismaAttemptFence(prisma, { runId, attempt: claimed.number, workerId: CLAIMANT.workerId }, () => undefined);
      // Without writeDirect: the fenced transaction through the Prisma client, as before.
      const fence: AttemptFence = way === "driver" ? full : { holder: full.holder, write: full.write, lose: full.lose.bind(full), lost: null };
      counting.statements = [];
      counting.on = count;
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const status = await runs.settle(claimed, fence, { type: "final", answer: "The week is planned." }, steps);
      const took = performance.now() - started;
      const used = process.cpuUsage(cpuBefore);
      counting.on = false;
      if (status !== "SUCCEEDED") throw new Error(`settled ${status}`);
      if (count && process.env.SHOW_SQL)
        console.log(
          way,
          counting.statements.map((sql) => sql.replace(/\s+/g, " ").slice(0, 60)),
        );
      if (count) sent[way] = counting.statements.filter((sql) => !/^\s*(-- Implicit ")?(BEGIN|COMMIT|ROLLBACK)\b/i.test(sql)).length;
      else {
        cpu[way].push((used.user + used.system) / 1000);
        wall[way].push(took);
      }
    };
    for (let i = 0; i < 20; i += 1) await settleOne(i % 2 ? "prisma" : "driver", false);
    cpu.prisma = [];
    cpu.driver = [];
    wall.prisma = [];
    wall.driver = [];
    await settleOne("prisma", true);
    await settleOne("driver", true);
    for (let i = 0; i < RUNS; i += 1) {
      const [first, second]: [Way, Way] = i % 2 ? ["prisma", "driver"] : ["driver", "prisma"];
      await settleOne(first, false);
      await settleOne(second, false);
    }
    const ms = (value: number) => value.toFixed(3);
    return (["prisma", "driver"] as const).map((way) => [
      backend,
      way,
      String(sent[way]),
      ms(percentile(cpu[way], 50)),
      ms(cpu[way].reduce((a, b) => a + b, 0) / cpu[way].length),
      ms(percentile(wall[way], 50)),
    ]);
  } finally {
    await db.close();
    await scratch?.drop();
  }
}

const rows = [["database", "transaction", "statements (without BEGIN, COMMIT)", "CPU ms p50", "CPU ms mean", "wall ms p50"]];
for (const backend of ["postgres", "pglite"] as const) rows.push(...(await measure(backend)));
printTable(rows);
