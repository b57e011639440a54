// One principal's schedules never hold back another's, and a stopping scheduler stops. With A's
// backlog of hundreds of due schedules and B's one, B's schedule is among the first fires of the
// pass (the owners take turns), counted in the order the fires' rows are written; a scheduler
// asked to stop in the middle of that backlog records at most the fire in hand, and stop() resolves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { Prisma } from "../../src/generated/prisma/client.js";
import { idOfType } from "../../src/domain/global-id.js";
import { silentLogger } from "../../src/logger.js";
import { Scheduler } from "../../src/runtime/scheduler.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

/** A's backlog: as many due schedules as this. */
const BACKLOG = 200;

describe.each(backends)("schedulers' turns on %s", (backend) => {
  let t: TestApp;
  let b: DossierClient;
  /** The schedule ids of the fires written, in the order their INSERT statements were sent. */
  const fireInserts: string[] = [];
  let aIds: string[] = [];
  let bId = "";

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () =>
        openMigratedTestDatabase(backend, {
          onQuery: (sql, params) => {
            if (/INSERT INTO "public"\."schedule_fire"/.test(sql)) fireInserts.push(params);
          },
        }),
    });
    b = t.as(await t.createPrincipal(`b-${backend}`));
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** One schedule created through the API, and `copies` more like it written beside it. */
  async function createSchedules(client: DossierClient, copies: number): Promise<string[]> {
    const workspace = await createWorkspace(client);
    const input = { workspaceId: workspace.id, question: "report", intervalSeconds: 3_600 };
    const payload = (await client.request(CreateScheduleDocument, { input })).createSchedule;
    const id = idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
    const prisma = t.app.db.prisma;
    const { limits, runCaps, ...row } = await prisma.schedule.findUniqueOrThrow({ where: { id } });
    const json = { limits: limits ?? Prisma.DbNull, runCaps: runCaps ?? Prisma.DbNull };
    const ids = Array.from({ length: copies }, (_, i) => `${id}-${i}`);
    await prisma.schedule.createMany({ data: ids.map((copy) => ({ ...row, ...json, id: copy })) });
    return [id, ...ids];
  }

  /** A's schedules all due 2 s ago, B's 1 s ago (each its first fire, an hour after it was created): oldest first, B's would come last. */
  async function makeDue(): Promise<void> {
    const prisma = t.app.db.prisma;
    await prisma.scheduleFire.deleteMany({});
    const due = (ago: string) => `UPDATE schedule SET next_fire_at = now() - interval '${ago}', created_at = now() - interval '1 hour ${ago}'`;
    await prisma.$executeRawUnsafe(`${due("2 seconds")} WHERE id = ANY ($1::text[])`, aIds);
    await prisma.$executeRawUnsafe(`${due("1 second")} WHERE id = $1`, bId);
    fireInserts.length = 0;
  }

  const fireCount = () => t.app.db.prisma.scheduleFire.count();

  it("another principal's due schedule fires within the first turn, whatever one principal's backlog", { timeout: 120_000 }, async () => {
    aIds = await createSchedules(t.client, BACKLOG - 1);
    bId = (await createSchedules(b, 0))[0]!;
    await makeDue();
    expect(await t.app.services.schedules.fireDue()).toBe(BACKLOG + 1);
    expect(fireInserts).toHaveLength(BACKLOG + 1);
    const bAt = fireInserts.findIndex((params) => params.includes(bId));
    // A's oldest due schedule may go first; B's is next.
    expect(bAt).toBeLessThanOrEqual(1);
  });

  it("a scheduler asked to stop amid a backlog records at most the fire in hand", { timeout: 120_000 }, async () => {
    await makeDue();
    const scheduler = new Scheduler({ work: t.app.services.schedules, logger: silentLogger });
    scheduler.start();
    await waitUntil(() => (fireInserts.length > 0 ? true : undefined), 30_000, 1);
    const stopped = scheduler.stop();
    const asked = await fireCount();
    await stopped;
    const recorded = await fireCount();
    expect(recorded - asked).toBeLessThanOrEqual(1);
    expect(recorded).toBeLessThan(BACKLOG + 1);
    // Nothing more after stop() resolved.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await fireCount()).toBe(recorded);
  });
});
