// A schedule's fires do not pile up: recording a fire (by its timer or by triggerSchedule) deletes
// the schedule's fires older than the latest kept, and another schedule's fires stay.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { ScheduleFiring } from "../../src/domain/schedules/schedule-firing.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const KEPT = 3;

describe.each(backends)("schedule fire retention on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function createSchedule(): Promise<string> {
    const workspace = await createWorkspace(t.client);
    const payload = (await t.client.request(CreateScheduleDocument, { input: { workspaceId: workspace.id, question: "digest", intervalSeconds: 60 } }))
      .createSchedule;
    return idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
  }

  it("keeps the latest fires of each schedule", async () => {
    const prisma = t.app.db.prisma;
    const firing = new ScheduleFiring({ prisma, events: t.app.events, admissions: t.app.services.admissions, firesKept: KEPT });
    const [id, other] = [await createSchedule(), await createSchedule()];
    const { ownerId } = await prisma.schedule.findUniqueOrThrow({ where: { id } });
    const fireTimes = async (scheduleId: string) =>
      (await prisma.scheduleFire.findMany({ where: { scheduleId }, orderBy: { fireTime: "asc" }, select: { fireTime: true } })).map((f) =>
        f.fireTime.getTime(),
      );

    const triggered: number[] = [];
    for (let i = 0; i < KEPT + 2; i++) triggered.push((await firing.fireNow(id, ownerId))!.fireTime.getTime());
    await firing.fireNow(other, ownerId);
    expect(await fireTimes(id)).toEqual(triggered.slice(-KEPT));

    // A fire of its timer (due now, a minute after the schedule was created) prunes too.
    await prisma.$executeRawUnsafe("UPDATE schedule SET created_at = now() - interval '1 minute', next_fire_at = now() WHERE id = $1", id);
    expect(await firing.fireDue()).toBe(1);
    const kept = await fireTimes(id);
    expect(kept).toHaveLength(KEPT);
    expect(kept.slice(0, -1)).toEqual(triggered.slice(-(KEPT - 1)));
    expect(await fireTimes(other)).toHaveLength(1);
  });
});
