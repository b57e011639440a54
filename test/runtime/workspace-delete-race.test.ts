// One lock order for a run and its workspace (domain/runs/lock-order.ts): a run that settles
// locks its run row (the fence) and then its workspace (its answer is published and linked there);
// deleting the workspace updates every run admitted with its goal versions (the foreign key's ON
// DELETE SET NULL). Taken in opposite orders, the two deadlock and PostgreSQL kills one: the run
// ends FAILED although it answered, or the delete answers "Unexpected error.". Here both race 50
// times in real concurrent transactions on PostgreSQL, the settle holding its run row a random
// few milliseconds before it reaches the workspace so the delete starts in between.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import type { SettleStep } from "../../src/domain/runs/vocabulary.js";
import { settleOutcome } from "../../src/runtime/attempt/settle-outcome.js";
import { publishAnswerStep } from "../../src/runtime/workspace/run-results.js";
import { silentLogger } from "../../src/logger.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { decodeGlobalId } from "../../src/domain/global-id.js";

const RACES = 50;
const rawId = (globalId: string) => decodeGlobalId(globalId)!.id;

describe.runIf(backends.includes("postgres"))("deleting a workspace while its run settles (PostgreSQL)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("postgres");
  });
  afterAll(async () => {
    await t?.close();
  });

  it(`${RACES} races: no deadlock, every answered run SUCCEEDED, every delete answered`, async () => {
    const { prisma } = t.app.db;
    const { services, events } = t.app;
    const runs = new PrismaRunState({ prisma, events, trace: { announce: () => undefined, exportEnded: () => undefined } });
    const claimant = {
      workerId: "race-worker",
      leaseMs: 60_000,
      leaseMarginMs: 1_000,
      maxRunningPerPrincipal: 100,
      liveness: async () => true,
      describeRun: () => ({ name: "run", attributes: {} }),
    };
    const failures: string[] = [];
    const first = { settle: 0, delete: 0 };
    for (let race = 0; race < RACES; race += 1) {
      const workspace = await createWorkspace(t.client, `Race ${race}`);
      const { run } = await admit(t.client, { question: `race ${race}`, workspaceId: workspace.id });
      const claimed = await runs.claim(claimant, rawId(run.id));
      if (!claimed) throw new Error("the run was not claimable");
      const fence = runs.fence({ runId: claimed.run.id, attempt: claimed.number, workerId: claimant.workerId }, () => undefined);
      const hold = race % 10 === 0 ? 0 : 2 + Math.floor(Math.random() * 25);
      // The settle transaction holds its run row here (the fence ran first), then publishes into the workspace.
      const holding: SettleStep = async () => {
        await sleep(hold);
      };
      const steps = [holding, publishAnswerStep({ publications: services.publications, ledger: services.ledger })];
      const settling = settleOutcome({ runs, steps, logger: silentLogger }, claimed, fence, { type: "final", answer: `answer ${race}` });
      await sleep(Math.floor(Math.random() * 4));
      const deleting = services.workspaces.deleteWorkspace({ principalId: claimed.run.ownerId }, rawId(workspace.id));
      const winner = await Promise.race([settling.then(() => "settle" as const), deleting.then(() => "delete" as const)]).catch(() => null);
      if (winner) first[winner] += 1;
      const [settled, deleted] = await Promise.allSettled([settling, deleting]);
      if (settled.status === "rejected") failures.push(`race ${race}: settling threw ${String(settled.reason)}`);
      else if (settled.value.status !== "SUCCEEDED")
        failures.push(`race ${race}: the answered run ended ${settled.value.status}: ${JSON.stringify(settled.value.settled)}`);
      if (deleted.status === "rejected") failures.push(`race ${race}: deleteWorkspace threw ${String(deleted.reason)}`);
      const stored = await prisma.run.findUniqueOrThrow({ where: { id: claimed.run.id } });
      if (stored.status !== "SUCCEEDED" || stored.answer !== `answer ${race}`) failures.push(`race ${race}: the run is stored ${stored.status}`);
    }
    console.info(`${RACES} races: the settle answered first in ${first.settle}, the delete in ${first.delete}`);
    expect(failures).toEqual([]);
  }, 120_000);
});
