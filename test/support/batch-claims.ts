// Claims made the way a worker makes them, many runs in one statement (PrismaRunState.claimMany),
// for tests that check which runs a claim takes and in what order.
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { createEventBus } from "../../src/events/topics.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";

/**
 * One claim of up to `count` runs at once, each by a worker of its own: the questions it took, in
 * the claim's order. `alive`: whether the claim's liveness check finds a lease's owner alive.
 */
export function batchClaims(prisma: PrismaClient, { alive }: { alive: boolean }) {
  const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
  let n = 0;
  return async (count: number, maxRunningPerPrincipal: number) => {
    n += 1;
    const claimed = await runs.claimMany(
      {
        workerId: `batch-worker-${n}`,
        leaseMs: 60_000,
        leaseMarginMs: 1_000,
        maxRunningPerPrincipal,
        liveness: async () => alive,
        describeRun: (run) => ({ name: run.question, attributes: {} }),
      },
      count,
    );
    return claimed.map((c) => c.run.question);
  };
}
