// A scheduler that cannot take the earliest due schedule waits its poll before looking again: a
// schedule left alone for a while after its fire failed, or one another scheduler's transaction
// holds, does not send the scheduler round its passes without pause (a core kept busy, the
// database asked hundreds of times a second).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { ScheduleFiring, type FireDueOptions } from "../../src/domain/schedules/schedule-firing.js";
import { createEventBus } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import { Scheduler } from "../../src/runtime/scheduler.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const POLL_MS = 1_000;
const WATCHED_MS = 3_000;
/** One pass at the start and one per poll, with one to spare. */
const MOST_PASSES = 5;

describe("a scheduler that cannot take the due schedule", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("postgres");
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A schedule due a second ago, every other schedule moved an hour on. */
  async function dueSchedule(): Promise<string> {
    const ws = await createWorkspace(t.client);
    const input = { workspaceId: ws.id, question: "q", intervalSeconds: 3600 };
    const payload = (await t.client.request(CreateScheduleDocument, { input })).createSchedule;
    const id = idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
    const prisma = t.app.db.prisma;
    await prisma.$executeRawUnsafe("UPDATE schedule SET next_fire_at = now() + interval '1 hour'");
    await prisma.$executeRawUnsafe("UPDATE schedule SET next_fire_at = now() - interval '1 second' WHERE id = $1", id);
    return id;
  }

  function counted(admitIn: () => Promise<never>): { scheduler: Scheduler; passes: () => number; failures: () => number } {
    const firing = new ScheduleFiring({
      prisma: t.app.db.prisma,
      events: createEventBus({ eventTarget: new EventTarget() }) as never,
      admissions: { admitIn } as never,
    });
    let passes = 0;
    let failures = 0;
    const work = {
      fireDue: (options?: FireDueOptions) => {
        passes++;
        return firing.fireDue(options);
      },
      earliestDue: () => firing.earliestDue(),
    };
    const logger = { ...silentLogger, error: () => void failures++ } as typeof silentLogger;
    return { scheduler: new Scheduler({ work, logger, pollMs: POLL_MS }), passes: () => passes, failures: () => failures };
  }

  it("after a failed fire, looks once a poll", { timeout: 60_000 }, async () => {
    await dueSchedule();
    let admits = 0;
    const { scheduler, passes, failures } = counted(async () => {
      admits++;
      throw new Error("the database went away");
    });
    scheduler.start();
    await new Promise((resolve) => setTimeout(resolve, WATCHED_MS));
    await scheduler.stop();
    expect(admits).toBe(1);
    expect(failures()).toBe(1);
    expect(passes()).toBeGreaterThan(0);
    expect(passes()).toBeLessThanOrEqual(MOST_PASSES);
  });

  it("while another transaction holds the due schedule, looks once a poll", { timeout: 60_000 }, async () => {
    const id = await dueSchedule();
    const { scheduler, passes } = counted(async () => {
      throw new Error("never admitted while held");
    });
    await t.app.db.prisma.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe("SELECT id FROM schedule WHERE id = $1 FOR UPDATE", id);
        scheduler.start();
        await tx.$queryRawUnsafe(`SELECT 1 AS x FROM pg_sleep(${WATCHED_MS / 1000})`);
      },
      { timeout: 30_000 },
    );
    await scheduler.stop();
    expect(passes()).toBeGreaterThan(0);
    expect(passes()).toBeLessThanOrEqual(MOST_PASSES);
  });
});
