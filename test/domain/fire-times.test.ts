// A schedule's fire times as pure functions: cron expressions in IANA time zones across both
// daylight-saving changes, endAt, a 29 February schedule, intervals, and what catch-up admits.
import { describe, expect, it } from "vitest";
import { CATCH_UP_MAX_FIRES, cronProblem, dueFires, isTimeZone, nextFireAfter, planFires, type Recurrence } from "../../src/domain/schedules/fire-times.js";

const cron = (expression: string, timezone: string, extra: Partial<Recurrence> = {}): Recurrence => ({
  cron: expression,
  intervalSeconds: null,
  timezone,
  startAt: null,
  endAt: null,
  createdAt: new Date("2026-01-01T00:00:00Z"),
  ...extra,
});

/** The next n fires after `from`, as ISO strings. */
function fires(recurrence: Recurrence, from: string, n: number): string[] {
  const out: string[] = [];
  let at: Date | null = new Date(from);
  for (let i = 0; i < n; i++) {
    at = nextFireAfter(recurrence, at);
    if (!at) break;
    out.push(at.toISOString());
  }
  return out;
}

describe("cron fire times", () => {
  it("keep 08:00 Berlin time across the spring and autumn changes", () => {
    const monday = cron("0 8 * * 1", "Europe/Berlin");
    // 29 March 2026 clocks go forward: 08:00 is 07:00Z before, 06:00Z after.
    expect(fires(monday, "2026-03-20T00:00:00Z", 2)).toEqual(["2026-03-23T07:00:00.000Z", "2026-03-30T06:00:00.000Z"]);
    // 25 October 2026 clocks go back.
    expect(fires(monday, "2026-10-20T00:00:00Z", 2)).toEqual(["2026-10-26T07:00:00.000Z", "2026-11-02T07:00:00.000Z"]);
  });

  it("run a fire in the spring gap once, at the first valid time, and one in the autumn overlap once (Berlin)", () => {
    const daily = cron("30 2 * * *", "Europe/Berlin");
    expect(fires(daily, "2026-03-28T00:00:00Z", 3)).toEqual(["2026-03-28T01:30:00.000Z", "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]);
    expect(fires(daily, "2026-10-24T00:00:00Z", 3)).toEqual(["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
  });

  it("keep 09:00 New York time across both changes, and the 02:30 fire in the gap and overlap", () => {
    const weekdays = cron("0 9 * * 1-5", "America/New_York");
    // 8 March 2026 clocks go forward (EST -5 → EDT -4); 1 November they go back.
    expect(fires(weekdays, "2026-03-06T00:00:00Z", 2)).toEqual(["2026-03-06T14:00:00.000Z", "2026-03-09T13:00:00.000Z"]);
    expect(fires(weekdays, "2026-10-30T00:00:00Z", 2)).toEqual(["2026-10-30T13:00:00.000Z", "2026-11-02T14:00:00.000Z"]);
    const daily = cron("30 2 * * *", "America/New_York");
    expect(fires(daily, "2026-03-07T12:00:00Z", 2)).toEqual(["2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]);
    // 1 November 02:00 EDT becomes 01:00 EST: 02:30 happens once (EST), 01:30 twice but fires once.
    expect(fires(daily, "2026-10-31T12:00:00Z", 2)).toEqual(["2026-11-01T07:30:00.000Z", "2026-11-02T07:30:00.000Z"]);
    expect(fires(cron("30 1 * * *", "America/New_York"), "2026-10-31T12:00:00Z", 2)).toEqual(["2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]);
  });

  it("fire on 29 February only in leap years", () => {
    expect(fires(cron("0 12 29 2 *", "UTC"), "2026-01-01T00:00:00Z", 2)).toEqual(["2028-02-29T12:00:00.000Z", "2032-02-29T12:00:00.000Z"]);
  });

  it("stop at endAt (inclusive) and start at startAt (inclusive)", () => {
    const hourly = cron("0 * * * *", "UTC", { startAt: new Date("2026-05-01T10:00:00Z"), endAt: new Date("2026-05-01T12:00:00Z") });
    expect(fires(hourly, "2026-04-01T00:00:00Z", 5)).toEqual(["2026-05-01T10:00:00.000Z", "2026-05-01T11:00:00.000Z", "2026-05-01T12:00:00.000Z"]);
  });

  it("take six fields as seconds first", () => {
    expect(fires(cron("*/2 * * * * *", "UTC"), "2026-01-01T00:00:01.500Z", 2)).toEqual(["2026-01-01T00:00:02.000Z", "2026-01-01T00:00:04.000Z"]);
  });

  it("reject what croner cannot read, and unknown time zones", () => {
    expect(cronProblem("0 8 * * 1")).toBeNull();
    expect(cronProblem("every monday")).toMatch(/parts/);
    expect(cronProblem("0 25 * * *")).not.toBeNull();
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
  });
});

describe("interval fire times", () => {
  it("count whole intervals from startAt, or from the second of creation", () => {
    const anchored = { ...cron("", "UTC"), cron: null, intervalSeconds: 90, startAt: new Date("2026-01-01T00:00:00Z") };
    expect(fires(anchored, "2025-12-31T00:00:00Z", 3)).toEqual(["2026-01-01T00:00:00.000Z", "2026-01-01T00:01:30.000Z", "2026-01-01T00:03:00.000Z"]);
    const created = { ...anchored, startAt: null, createdAt: new Date("2026-01-01T00:00:00.700Z") };
    expect(fires(created, "2026-01-01T00:00:00.700Z", 2)).toEqual(["2026-01-01T00:01:30.000Z", "2026-01-01T00:03:00.000Z"]);
  });
});

describe("due fires and catch-up", () => {
  const everyTwo = cron("*/2 * * * * *", "UTC");
  const now = new Date("2026-01-01T00:00:20.300Z");
  const due = dueFires(everyTwo, new Date("2026-01-01T00:00:06Z"), now);

  it("list every fire from the first unfired one to now", () => {
    expect(due.map((d) => d.toISOString().slice(17, 19))).toEqual(["06", "08", "10", "12", "14", "16", "18", "20"]);
  });

  it("admit on-time fires always, and missed ones as catchUp says", () => {
    const iso = (dates: Date[]) => dates.map((d) => d.toISOString().slice(17, 19));
    expect(iso(planFires(due, "ALL", now).admit)).toEqual(["06", "08", "10", "12", "14", "16", "18", "20"]);
    const latest = planFires(due, "LATEST", now);
    expect(iso(latest.admit)).toEqual(["14", "16", "18", "20"]);
    expect(iso(latest.skip.map((s) => s.fireTime))).toEqual(["06", "08", "10", "12"]);
    const none = planFires(due, "NONE", now);
    expect(iso(none.admit)).toEqual(["16", "18", "20"]);
    expect(none.skip[0]!.reason).toMatch(/missed/);
  });

  it("count a late fire as missed only when it was due before the scheduler started", () => {
    const iso = (dates: Date[]) => dates.map((d) => d.toISOString().slice(17, 19));
    // A scheduler running since 00:00:05 saw every fire come due: a loaded machine made them late,
    // and NONE still admits each one.
    const running = planFires(due, "NONE", now, new Date("2026-01-01T00:00:05Z"));
    expect(iso(running.admit)).toEqual(["06", "08", "10", "12", "14", "16", "18", "20"]);
    expect(running.skip).toEqual([]);
    // Started at 00:00:11: the fires at 06–10 came due while none ran; 12 and later are only late.
    const restarted = planFires(due, "NONE", now, new Date("2026-01-01T00:00:11Z"));
    expect(iso(restarted.admit)).toEqual(["12", "14", "16", "18", "20"]);
    expect(iso(restarted.skip.map((s) => s.fireTime))).toEqual(["06", "08", "10"]);
    const latest = planFires(due, "LATEST", now, new Date("2026-01-01T00:00:11Z"));
    expect(iso(latest.admit)).toEqual(["10", "12", "14", "16", "18", "20"]);
  });

  it("bound the catch-up to the latest fires", () => {
    const long = dueFires(everyTwo, new Date("2025-12-31T00:00:00Z"), now);
    expect(long).toHaveLength(CATCH_UP_MAX_FIRES);
    expect(long.at(-1)!.toISOString()).toBe("2026-01-01T00:00:20.000Z");
  });
});
