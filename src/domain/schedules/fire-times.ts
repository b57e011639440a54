// When a schedule fires (issue 41), as pure functions of its recurrence and the clock. Cron
// expressions are read by croner in the schedule's IANA time zone, which decides what a wall-clock
// time means across daylight-saving changes: a fixed-time fire that falls in the spring gap runs at
// the first valid time after it, one in the autumn overlap runs once. Interval schedules count
// whole intervals from their anchor (startAt, or the second the schedule was created).
import { Cron } from "croner";

export type Recurrence = {
  cron: string | null;
  intervalSeconds: number | null;
  timezone: string;
  /** No fire before it (inclusive). */
  startAt: Date | null;
  /** No fire after it (inclusive: a fire exactly at endAt still fires). */
  endAt: Date | null;
  /** Interval schedules without startAt count from here (the schedule's creation). */
  createdAt: Date;
};

/** A fire is missed once it is this late: a running scheduler looks at least every second. */
export const MISSED_AFTER_MS = 5_000;
/** Catch-up looks back at most this far… */
export const CATCH_UP_WINDOW_MS = 24 * 60 * 60 * 1000;
/** …and at most this many fires (the latest ones). Older missed fires are dropped unrecorded. */
export const CATCH_UP_MAX_FIRES = 100;

/** Whether the name is an IANA time zone this runtime knows. */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The cron expression's problem, or null when croner accepts it (5 or 6 fields; seconds first when 6). */
export function cronProblem(expression: string, timezone = "UTC"): string | null {
  try {
    cronOf(expression, timezone).nextRun(new Date(0));
    return null;
  } catch (error) {
    return error instanceof Error ? error.message.replace(/^\w+: /, "") : String(error);
  }
}

function cronOf(expression: string, timezone: string): Cron {
  return new Cron(expression, { timezone, paused: true, mode: "5-or-6-parts" });
}

const floorToSecond = (at: Date) => new Date(Math.floor(at.getTime() / 1000) * 1000);

/** The first fire strictly after `after`, or null when the schedule has none left (past endAt). */
export function nextFireAfter(recurrence: Recurrence, after: Date): Date | null {
  const { startAt, endAt } = recurrence;
  // A fire at startAt itself counts: look from just before it.
  const from = startAt && after.getTime() < startAt.getTime() ? new Date(startAt.getTime() - 1) : after;
  let next: Date | null;
  if (recurrence.cron) {
    next = cronOf(recurrence.cron, recurrence.timezone).nextRun(from);
  } else if (recurrence.intervalSeconds) {
    const anchor = (startAt ?? floorToSecond(recurrence.createdAt)).getTime();
    const step = recurrence.intervalSeconds * 1000;
    const k = Math.max(0, Math.floor((from.getTime() - anchor) / step) + 1);
    next = new Date(anchor + k * step);
  } else {
    throw new Error("a schedule needs a cron expression or an interval");
  }
  if (next && endAt && next.getTime() > endAt.getTime()) return null;
  return next;
}

/**
 * The fires due at `now`, oldest first, from `nextFireAt` (the first not yet fired) on: at most
 * CATCH_UP_MAX_FIRES, none older than CATCH_UP_WINDOW_MS.
 */
export function dueFires(recurrence: Recurrence, nextFireAt: Date, now: Date): Date[] {
  if (nextFireAt.getTime() > now.getTime()) return [];
  // Start no earlier than the window, nor than the oldest of the latest CATCH_UP_MAX_FIRES fires:
  // a long outage of a frequent schedule is not walked fire by fire.
  const lower = Math.max(nextFireAt.getTime(), now.getTime() - CATCH_UP_WINDOW_MS, oldestOfLatest(recurrence, now));
  const first = lower === nextFireAt.getTime() ? nextFireAt : nextFireAfter(recurrence, new Date(lower - 1));
  const fires: Date[] = [];
  for (let at: Date | null = first; at && at.getTime() <= now.getTime(); at = nextFireAfter(recurrence, at)) {
    fires.push(at);
    if (fires.length > CATCH_UP_MAX_FIRES) fires.shift();
  }
  return fires;
}

/** The time of the CATCH_UP_MAX_FIRES-th latest fire at or before `now` (a lower bound: bounds are applied after). */
function oldestOfLatest(recurrence: Recurrence, now: Date): number {
  if (recurrence.intervalSeconds) return now.getTime() - CATCH_UP_MAX_FIRES * recurrence.intervalSeconds * 1000;
  if (!recurrence.cron) return 0;
  return cronOf(recurrence.cron, recurrence.timezone).previousRuns(CATCH_UP_MAX_FIRES, now).at(-1)?.getTime() ?? 0;
}

export type CatchUp = "NONE" | "LATEST" | "ALL";

export type FirePlan = {
  /** Fires to admit, oldest first. */
  admit: Date[];
  /** Missed fires the catch-up policy drops, recorded as SKIPPED with the reason. */
  skip: { fireTime: Date; reason: string }[];
};

/**
 * What happens to the due fires. A fire is missed when it is more than MISSED_AFTER_MS late and
 * was due before the scheduler looking at it started (`runningSince`; no scheduler ran when it was
 * due). A fire due while the scheduler ran is late, not missed — a loaded machine or a slow
 * transaction — and is always admitted, however late. Missed ones: NONE skips them all, LATEST
 * admits only the latest of them, ALL admits every one.
 */
export function planFires(due: readonly Date[], catchUp: CatchUp, now: Date, runningSince?: Date): FirePlan {
  const missed = due.filter((at) => now.getTime() - at.getTime() > MISSED_AFTER_MS && (runningSince === undefined || at.getTime() < runningSince.getTime()));
  const onTime = due.slice(missed.length);
  const reason = `missed while no scheduler ran (catchUp ${catchUp})`;
  if (catchUp === "ALL") return { admit: [...due], skip: [] };
  if (catchUp === "LATEST" && missed.length > 0) {
    return { admit: [missed.at(-1)!, ...onTime], skip: missed.slice(0, -1).map((fireTime) => ({ fireTime, reason })) };
  }
  return { admit: onTime, skip: missed.map((fireTime) => ({ fireTime, reason })) };
}
