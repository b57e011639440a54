// A scheduler that hears every schedule change (the embedded server's one process, or instances
// sharing Redis) does not look at the schedules every second while none is due: it sleeps until the
// next fire it knows of, and a schedule created (or changed, resumed, its workspace restored) wakes
// it at once, so the new schedule still fires on time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import type { FireDueOptions } from "../../src/domain/schedules/schedule-firing.js";
import { silentLogger } from "../../src/logger.js";
import { Scheduler } from "../../src/runtime/scheduler.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const WATCHED_MS = 3_000;
const INTERVAL_SECONDS = 2;

describe("a scheduler that hears schedule changes", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite");
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("looks once while nothing is due, and fires a schedule created meanwhile on time", { timeout: 60_000 }, async () => {
    let passes = 0;
    const schedules = t.app.services.schedules;
    const work = {
      fireDue: (options?: FireDueOptions) => {
        passes++;
        return schedules.fireDue(options);
      },
      earliestDue: () => schedules.earliestDue(),
    };
    const scheduler = new Scheduler({ work, logger: silentLogger, changes: t.app.events });
    scheduler.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, WATCHED_MS));
      // The start's pass only (looking every second: four).
      expect(passes).toBe(1);

      const ws = await createWorkspace(t.client);
      const input = { workspaceId: ws.id, question: "q", intervalSeconds: INTERVAL_SECONDS };
      const created = expectType((await t.client.request(CreateScheduleDocument, { input })).createSchedule, "CreateScheduleSuccess").schedule;
      const id = idOfType(created.id, "Schedule")!;
      const prisma = t.app.db.prisma;
      await expect.poll(() => prisma.scheduleFire.count({ where: { scheduleId: id } }), { timeout: 20_000, interval: 50 }).toBeGreaterThan(0);
      const fire = await prisma.scheduleFire.findFirstOrThrow({ where: { scheduleId: id }, orderBy: { fireTime: "asc" } });
      expect(fire.status).toBe("ADMITTED");
      // Recorded at its fire time (give or take a busy machine), not at a look a minute later.
      expect(fire.createdAt.getTime() - fire.fireTime.getTime()).toBeLessThan(10_000);
    } finally {
      await scheduler.stop();
    }
  });
});
