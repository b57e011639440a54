// pauseAfterFailures counts a fire whose run was refused (recorded FAILED, no run) as a failure:
// a schedule every admission of which is refused pauses itself after that many fires instead of
// recording FAILED fires forever.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { ValidationError } from "../../src/domain/errors.js";
import { idOfType } from "../../src/domain/global-id.js";
import { ScheduleFiring } from "../../src/domain/schedules/schedule-firing.js";
import { createEventBus } from "../../src/events/topics.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("a schedule whose fires are refused", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("postgres");
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("pauses after pauseAfterFailures refused fires", { timeout: 60_000 }, async () => {
    const ws = await createWorkspace(t.client);
    const input = { workspaceId: ws.id, question: "q", intervalSeconds: 60, pauseAfterFailures: 2 };
    const payload = (await t.client.request(CreateScheduleDocument, { input })).createSchedule;
    const id = idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
    const first = (await t.app.db.prisma.schedule.findUniqueOrThrow({ where: { id } })).nextFireAt!;
    let clock = first;
    let admissions = 0;
    const firing = new ScheduleFiring({
      prisma: t.app.db.prisma,
      events: createEventBus({ eventTarget: new EventTarget() }) as never,
      admissions: {
        admitIn: async () => {
          admissions++;
          throw new ValidationError([{ field: "agent", message: "no such agent profile" }]);
        },
      } as never,
      now: () => clock,
    });
    for (let fire = 0; fire < 4; fire++) {
      clock = new Date(first.getTime() + fire * 60_000);
      await firing.fireDue();
    }
    const fires = await t.app.db.prisma.scheduleFire.findMany({ where: { scheduleId: id }, orderBy: { fireTime: "asc" } });
    expect(fires.map((fire) => fire.status)).toEqual(["FAILED", "FAILED"]);
    expect(admissions).toBe(2);
    const schedule = await t.app.db.prisma.schedule.findUniqueOrThrow({ where: { id } });
    expect(schedule.paused).toBe(true);
    expect(schedule.pausedReason).toMatch(/^paused after 2 consecutive failed/);
  });
});
