// An archived workspace's schedules do not fire: over many scheduler passes (on a clock the test
// moves a second at a time) they record no fire, and no statement of the passes names them; a
// change while archived (updateSchedule) gives them no next fire; a restore gives each its next
// fire after the restore, and from then on they fire every second again — none of the fires that
// fell while the workspace was archived.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArchiveWorkspaceDocument, CreateScheduleDocument, RestoreWorkspaceDocument, UpdateScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { Prisma } from "../../src/generated/prisma/client.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Schedules of the workspace, one created through the API and the others written beside it. */
const SCHEDULES = 5;
/** Scheduler passes while the workspace is archived, one a second. */
const ARCHIVED_TICKS = 20;
/** Scheduler passes after the restore, one a second. */
const RESTORED_TICKS = 5;
const START = Date.parse("2031-03-01T00:00:00.000Z");

describe.each(backends)("an archived workspace's schedules on %s", (backend) => {
  let t: TestApp;
  let clock = START;
  const statements: { sql: string; params: string }[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, {
      now: () => new Date(clock),
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql, params) => void statements.push({ sql, params }) }),
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("fire not at all while archived, and every second again from the restore on", { timeout: 120_000 }, async () => {
    const prisma = t.app.db.prisma;
    const schedules = t.app.services.schedules;
    const workspace = await createWorkspace(t.client);
    const input = { workspaceId: workspace.id, question: "digest", intervalSeconds: 1, overlap: "ENQUEUE" as const };
    const created = expectType((await t.client.request(CreateScheduleDocument, { input })).createSchedule, "CreateScheduleSuccess").schedule;
    const id = idOfType(created.id, "Schedule")!;
    const { limits, runCaps, ...row } = await prisma.schedule.findUniqueOrThrow({ where: { id } });
    const copies = Array.from({ length: SCHEDULES - 1 }, (_, i) => `${id}-${i}`);
    await prisma.schedule.createMany({
      data: copies.map((copy) => ({ ...row, limits: limits ?? Prisma.DbNull, runCaps: runCaps ?? Prisma.DbNull, id: copy })),
    });
    const ids = [id, ...copies];
    const tick = async () => {
      clock += 1_000;
      return schedules.fireDue();
    };
    const fireCount = () => prisma.scheduleFire.count({ where: { scheduleId: { in: ids } } });

    // Active: each fires on its second.
    expect(await tick()).toBe(SCHEDULES);

    await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    statements.length = 0;
    const recorded: number[] = [];
    for (let i = 0; i < ARCHIVED_TICKS; i++) recorded.push(await tick());
    expect(recorded).toEqual(Array.from({ length: ARCHIVED_TICKS }, () => 0));
    expect(await schedules.earliestDue()).toBeNull();
    expect(statements.filter((s) => ids.some((scheduleId) => s.params.includes(scheduleId)))).toEqual([]);
    expect(statements.filter((s) => /INSERT INTO "public"\."schedule_fire"/.test(s.sql))).toEqual([]);
    expect(await fireCount()).toBe(SCHEDULES);
    expect((await prisma.schedule.findMany({ where: { id: { in: ids } } })).map((s) => s.nextFireAt)).toEqual(ids.map(() => null));

    // Changed while archived: still no next fire.
    const updated = (await t.client.request(UpdateScheduleDocument, { input: { id: created.id, question: "weekly digest" } })).updateSchedule;
    expect(expectType(updated, "UpdateScheduleSuccess").schedule.nextFireAt).toBeNull();
    // Given a next fire by a change that raced the archive: its next pass records nothing, and takes the next fire away.
    await prisma.schedule.update({ where: { id: copies[0]! }, data: { nextFireAt: new Date(clock) } });
    expect(await tick()).toBe(0);
    expect((await prisma.schedule.findUniqueOrThrow({ where: { id: copies[0]! } })).nextFireAt).toBeNull();
    expect(await fireCount()).toBe(SCHEDULES);

    // Restored half-way through a second: the next fire is the next whole second.
    clock += 500;
    const restoredAt = clock;
    await t.client.request(RestoreWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const next = (await prisma.schedule.findMany({ where: { id: { in: ids } } })).map((s) => s.nextFireAt?.getTime());
    expect(next).toEqual(ids.map(() => restoredAt + 500));
    for (let i = 0; i < RESTORED_TICKS; i++) expect(await tick()).toBe(SCHEDULES);
    const fires = await prisma.scheduleFire.findMany({ where: { scheduleId: { in: ids } }, orderBy: { fireTime: "asc" } });
    expect(fires).toHaveLength(SCHEDULES * (1 + RESTORED_TICKS));
    expect(fires.every((fire) => fire.status === "ADMITTED")).toBe(true);
    const times = [...new Set(fires.map((fire) => fire.fireTime.getTime() - START))];
    expect(times).toEqual([1_000, ...Array.from({ length: RESTORED_TICKS }, (_, i) => restoredAt + 500 - START + i * 1_000)]);
  });
});
