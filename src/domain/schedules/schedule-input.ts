// What createSchedule and updateSchedule accept (issue 41), validated once: exactly one of a cron
// expression and an interval, an IANA time zone, a window that leaves a fire, the run's question,
// agent and limits as an admission takes them.
import { z } from "zod";
import { ValidationError } from "../errors.js";
import { runLimits } from "../runs/admission-request.js";
import { nonBlank, parseInput } from "../validation.js";
import { GOAL_STATEMENT_MAX } from "../workspace/workspace-service.js";
import { cronProblem, isTimeZone, nextFireAfter, type Recurrence } from "./fire-times.js";

export const SCHEDULE_OVERLAPS = ["SKIP", "ENQUEUE", "INTERRUPT"] as const;
export const SCHEDULE_CATCH_UPS = ["NONE", "LATEST", "ALL"] as const;
/** The longest interval: a year. */
export const INTERVAL_SECONDS_MAX = 366 * 24 * 3600;
export const PAUSE_AFTER_FAILURES_MAX = 100;

const fields = {
  cron: z.string().trim().min(1, "must not be empty").max(200, "must be at most 200 characters").nullish(),
  intervalSeconds: z.number().int().min(1, "must be at least 1").max(INTERVAL_SECONDS_MAX, `must be at most ${INTERVAL_SECONDS_MAX}`).nullish(),
  timezone: z.string().trim().max(64).nullish(),
  question: nonBlank(GOAL_STATEMENT_MAX),
  agent: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, "must be an agent profile name such as researcher"),
  limits: runLimits.nullish(),
  overlap: z.enum(SCHEDULE_OVERLAPS),
  catchUp: z.enum(SCHEDULE_CATCH_UPS),
  startAt: z.date().nullish(),
  endAt: z.date().nullish(),
  pauseAfterFailures: z.number().int().min(1, "must be at least 1").max(PAUSE_AFTER_FAILURES_MAX).nullish(),
};

/** A schedule's settings, complete (a create, or an update merged over the stored schedule). */
const settingsSchema = z.object(fields);
export type ScheduleSettingsInput = z.input<typeof settingsSchema>;

export type ScheduleSettings = {
  cron: string | null;
  intervalSeconds: number | null;
  timezone: string;
  question: string;
  agent: string;
  /** As given: omitted limits take the admission's defaults at each fire. */
  limits: z.input<typeof runLimits> | null;
  overlap: (typeof SCHEDULE_OVERLAPS)[number];
  catchUp: (typeof SCHEDULE_CATCH_UPS)[number];
  startAt: Date | null;
  endAt: Date | null;
  pauseAfterFailures: number | null;
};

/**
 * The settings, checked as a whole; each problem is a ValidationError naming its field. The
 * first fire after `now` must exist (an endAt already past leaves none).
 */
export function parseSettings(input: ScheduleSettingsInput, { now, createdAt }: { now: Date; createdAt: Date }): ScheduleSettings & { nextFireAt: Date } {
  const parsed = parseInput(settingsSchema, input);
  const settings: ScheduleSettings = {
    cron: parsed.cron ?? null,
    intervalSeconds: parsed.intervalSeconds ?? null,
    timezone: parsed.timezone || "UTC",
    question: parsed.question,
    agent: parsed.agent,
    limits: input.limits ?? null,
    overlap: parsed.overlap,
    catchUp: parsed.catchUp,
    startAt: parsed.startAt ?? null,
    endAt: parsed.endAt ?? null,
    pauseAfterFailures: parsed.pauseAfterFailures ?? null,
  };
  const problem = (field: string, message: string) => new ValidationError([{ field, message }]);
  if (settings.cron && settings.intervalSeconds) throw problem("intervalSeconds", "give either cron or intervalSeconds, not both");
  if (!settings.cron && !settings.intervalSeconds) throw problem("cron", "give cron (or intervalSeconds)");
  if (!isTimeZone(settings.timezone)) throw problem("timezone", `is not an IANA time zone (such as Europe/Berlin): ${settings.timezone}`);
  if (settings.cron) {
    const cronError = cronProblem(settings.cron, settings.timezone);
    if (cronError) throw problem("cron", `is not a cron expression: ${cronError}`);
  }
  if (settings.startAt && settings.endAt && settings.endAt.getTime() <= settings.startAt.getTime()) throw problem("endAt", "must be after startAt");
  const nextFireAt = nextFireAfter(recurrenceOf({ ...settings, createdAt }), now);
  if (!nextFireAt) {
    // A cron expression no date matches ("0 0 30 2 *": February 30th) is the problem, not endAt.
    if (!nextFireAfter(recurrenceOf({ ...settings, endAt: null, createdAt }), now)) throw problem("cron", "never fires: no date matches it");
    throw problem("endAt", "leaves no fire after now");
  }
  return { ...settings, nextFireAt };
}

export function recurrenceOf(schedule: Pick<Recurrence, keyof Recurrence>): Recurrence {
  const { cron, intervalSeconds, timezone, startAt, endAt, createdAt } = schedule;
  return { cron, intervalSeconds, timezone, startAt, endAt, createdAt };
}
