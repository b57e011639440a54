// A schedule triggered at the very millisecond of one of its fire times still fires on its own
// time: the triggered fire gets a time no scheduled fire has and a key of its own, so the scheduled
// fire is admitted as well and next_fire_at moves on (instead of the schedule failing every 30
// seconds for a day). Triggered the other way round, or twice in one millisecond, the caller gets
// its fire, never a database error. A schedule that already has a fire at a due time (a trigger's,
// recorded before) counts that time done and moves on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { ScheduleFiring } from "../../src/domain/schedules/schedule-firing.js";
import { createEventBus } from "../../src/events/topics.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MINUTE = 60_000;

describe("triggers at a schedule's fire times", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("postgres");
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A schedule every minute, its first fire time, and a firing whose clock the test sets. */
  async function everyMinute() {
    const ws = await createWorkspace(t.client);
    const input = { workspaceId: ws.id, question: "q", intervalSeconds: 60, overlap: "ENQUEUE" as const };
    const payload = (await t.client.request(CreateScheduleDocument, { input })).createSchedule;
    const id = idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
    const schedule = await t.app.db.prisma.schedule.findUniqueOrThrow({ where: { id } });
    const clock = { now: schedule.nextFireAt! };
    const firing = new ScheduleFiring({
      prisma: t.app.db.prisma,
      events: createEventBus({ eventTarget: new EventTarget() }) as never,
      admissions: t.app.services.admissions,
      now: () => clock.now,
    });
    return { id, ownerId: schedule.ownerId, first: schedule.nextFireAt!, clock, firing };
  }

  const fires = (scheduleId: string) =>
    t.app.db.prisma.scheduleFire.findMany({ where: { scheduleId }, orderBy: { fireTime: "asc" }, select: { fireTime: true, status: true } });
  const nextFireAt = async (id: string) => (await t.app.db.prisma.schedule.findUniqueOrThrow({ where: { id } })).nextFireAt;

  it("a trigger at a fire time, then the scheduled fire: both admitted, and the schedule moves on", { timeout: 60_000 }, async () => {
    const { id, ownerId, first, clock, firing } = await everyMinute();
    const triggered = await firing.fireNow(id, ownerId);
    expect(triggered?.status).toBe("ADMITTED");
    expect(triggered?.fireTime.getTime()).not.toBe(first.getTime());

    clock.now = new Date(first.getTime() + 500);
    const errors: unknown[] = [];
    expect(await firing.fireDue({ failed: (_id, error) => errors.push(error) })).toBe(1);
    expect(errors).toEqual([]);
    expect(await nextFireAt(id)).toEqual(new Date(first.getTime() + MINUTE));
    const recorded = await fires(id);
    expect(recorded.map((fire) => fire.status)).toEqual(["ADMITTED", "ADMITTED"]);
    expect(recorded.map((fire) => fire.fireTime.getTime())).toContain(first.getTime());
    expect(await t.app.db.prisma.run.count({ where: { scheduleId: id } })).toBe(2);
  });

  it("the scheduled fire, then a trigger at its time, then another in the same millisecond: three fires", { timeout: 60_000 }, async () => {
    const { id, ownerId, first, clock, firing } = await everyMinute();
    clock.now = first;
    expect(await firing.fireDue()).toBe(1);
    const one = await firing.fireNow(id, ownerId);
    const two = await firing.fireNow(id, ownerId);
    expect([one?.status, two?.status]).toEqual(["ADMITTED", "ADMITTED"]);
    const times = (await fires(id)).map((fire) => fire.fireTime.getTime());
    expect(new Set(times).size).toBe(3);
    expect(times).toContain(first.getTime());
    expect(await t.app.db.prisma.run.count({ where: { scheduleId: id } })).toBe(3);
  });

  it("a fire already recorded at a due time counts as done", { timeout: 60_000 }, async () => {
    const { id, first, clock, firing } = await everyMinute();
    await t.app.db.prisma.scheduleFire.create({ data: { scheduleId: id, fireTime: first, status: "ADMITTED" } });
    clock.now = new Date(first.getTime() + 500);
    const errors: unknown[] = [];
    expect(await firing.fireDue({ failed: (_id, error) => errors.push(error) })).toBe(0);
    expect(errors).toEqual([]);
    expect(await nextFireAt(id)).toEqual(new Date(first.getTime() + MINUTE));
    expect(await fires(id)).toHaveLength(1);
  });
});
