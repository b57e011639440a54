// Workspace schedules (issue 41): the Schedule node, its fires, Workspace.schedules, Run.schedule
// and Run.fireTime, and the mutations that manage them.
import { paged } from "../list-connection.js";
import { ForbiddenError, NotFoundError, ScheduleLimitError, ValidationError, WorkspaceArchivedError } from "../../domain/errors.js";
import { FIRES_KEPT_PER_SCHEDULE } from "../../domain/schedules/schedule-firing.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";
import { CATCH_UP_MAX_FIRES, CATCH_UP_WINDOW_MS, MISSED_AFTER_MS } from "../../domain/schedules/fire-times.js";
import type { Schedule, ScheduleFire } from "../../generated/prisma/client.js";
import { ScheduleCatchUp, ScheduleFireStatus, ScheduleOverlap } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { GOAL_STATEMENT_MAX } from "../../domain/workspace/workspace-service.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { requireIdOfType } from "../global-id.js";
import { encodeGlobalId } from "../../domain/global-id.js";
import { mine, ownedBy } from "./owned.js";
import { RunLimitsInput, RunNode } from "./run.js";
import { WorkspaceNode } from "./workspace.js";
import { RunCapsObject, runCapsOf } from "./run-caps.js";

const ScheduleOverlapEnum = builder.enumType(ScheduleOverlap, {
  name: "ScheduleOverlap",
  description:
    "What a fire does while the schedule's previous run is still active (queued, running, waiting or paused): SKIP records the fire SKIPPED; ENQUEUE admits the run queued behind it; INTERRUPT cancels the active run (as cancelRun NOW) and admits the new one, so an API key needs CANCEL (besides ADMIT) to create, update, resume or trigger a schedule with it.",
});

const ScheduleCatchUpEnum = builder.enumType(ScheduleCatchUp, {
  name: "ScheduleCatchUp",
  description: `Fires missed while no scheduler ran (due before the scheduler that finds them started, and more than ${MISSED_AFTER_MS / 1000} s late), looked back at most ${CATCH_UP_WINDOW_MS / 3_600_000} hours and ${CATCH_UP_MAX_FIRES} fires: NONE records them SKIPPED, LATEST admits only the latest of them (the others SKIPPED), ALL admits every one. A fire due while a scheduler ran is always admitted, however late.`,
});

const ScheduleFireStatusEnum = builder.enumType(ScheduleFireStatus, {
  name: "ScheduleFireStatus",
  description: "ADMITTED: the fire's run was admitted. SKIPPED: not admitted, see reason. FAILED: the admission refused it, see reason.",
});

export const ScheduleFireObject = builder.prismaObject("ScheduleFire", {
  description: "One fire of a schedule: each fire time is recorded once, whatever happened to it.",
  fields: (t) => ({
    id: t.id({ description: "The fire's own id (its clients' caches key it by it).", resolve: (fire) => encodeGlobalId("ScheduleFire", fire.id) }),
    fireTime: t.expose("fireTime", { type: "DateTime" }),
    status: t.expose("status", { type: ScheduleFireStatusEnum }),
    reason: t.exposeString("reason", { nullable: true, description: "Why the fire was SKIPPED or FAILED." }),
    run: t.prismaField({
      type: "Run",
      nullable: true,
      description: "The run an ADMITTED fire admitted.",
      resolve: (query, fire, _args, ctx) => (fire.runId ? ctx.prisma.run.findFirst({ ...query, where: { id: fire.runId, ...mine(ctx) } }) : null),
    }),
  }),
});

export const ScheduleNode = builder.prismaNode("Schedule", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  description:
    "A workspace's recurring research: on each fire, a run of `question` is admitted in the workspace (idempotency key `schedule:<id>@<fireTime>`, so a fire is admitted once whatever the number of schedulers), in the schedule's own conversation.",
  fields: (t) => ({
    workspace: t.relation("workspace", { type: WorkspaceNode, nullable: true }),
    cron: t.exposeString("cron", { nullable: true, description: "5 fields (minute first), or 6 with seconds first; read in `timezone`." }),
    intervalSeconds: t.exposeInt("intervalSeconds", { nullable: true }),
    timezone: t.exposeString("timezone", { description: "The IANA time zone the cron expression is read in." }),
    question: t.exposeString("question", { extensions: largeText(GOAL_STATEMENT_MAX) }),
    agent: t.exposeString("agent"),
    overlap: t.expose("overlap", { type: ScheduleOverlapEnum }),
    catchUp: t.expose("catchUp", { type: ScheduleCatchUpEnum }),
    startAt: t.expose("startAt", { type: "DateTime", nullable: true }),
    endAt: t.expose("endAt", { type: "DateTime", nullable: true }),
    pauseAfterFailures: t.exposeInt("pauseAfterFailures", { nullable: true }),
    nextFireAt: t.expose("nextFireAt", {
      type: "DateTime",
      nullable: true,
      description: "The next due fire; null once past endAt, and while the workspace is archived.",
    }),
    paused: t.exposeBoolean("paused"),
    pausedReason: t.exposeString("pausedReason", {
      nullable: true,
      description:
        "Why it is paused: by its owner, after pauseAfterFailures failed runs, or because the API key that created, last updated or resumed it was revoked.",
    }),
    runCaps: t.field({
      type: RunCapsObject,
      nullable: true,
      description:
        "The run caps of the API key that created or last updated the schedule: every fire is admitted within them (and triggerSchedule or resumeSchedule within the caller's too); null: none.",
      resolve: (schedule) => runCapsOf(schedule.runCaps),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    lastFire: t.prismaField({
      type: "ScheduleFire",
      nullable: true,
      description: "The latest fire recorded.",
      resolve: (query, schedule, _args, ctx) =>
        ctx.prisma.scheduleFire.findFirst({ ...query, where: { scheduleId: schedule.id }, orderBy: { fireTime: "desc" } }),
    }),
    fires: t.prismaConnection(
      {
        type: "ScheduleFire",
        description: `The fires recorded, newest first: the latest ${groupedDigits(FIRES_KEPT_PER_SCHEDULE)} are kept.`,
        cursor: "id",
        ...paged({ defaultSize: 20, maxSize: 100 }),
        resolve: (query, schedule, _args, ctx) =>
          ctx.prisma.scheduleFire.findMany({ ...query, where: { scheduleId: schedule.id }, orderBy: [{ fireTime: "desc" }, { id: "desc" }] }),
      },
      {
        name: "ScheduleFireConnection",
        fields: countFields<{ id: string }>((schedule, ctx) => boundedCount(ctx.prisma.scheduleFire, { scheduleId: schedule.id })),
      },
      { name: "ScheduleFireEdge" },
    ),
  }),
});

builder.prismaObjectFields(WorkspaceNode, (t) => ({
  schedules: t.prismaConnection(
    {
      type: "Schedule",
      description: "The workspace's schedules, oldest first.",
      cursor: "id",
      ...paged({ defaultSize: 20, maxSize: 100 }),
      resolve: (query, workspace, _args, ctx) =>
        ctx.prisma.schedule.findMany({ ...query, where: { workspaceId: workspace.id, ...mine(ctx) }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] }),
    },
    {
      name: "ScheduleConnection",
      fields: countFields<{ id: string }>((workspace, ctx) => boundedCount(ctx.prisma.schedule, { workspaceId: workspace.id, ...mine(ctx) })),
    },
    { name: "ScheduleEdge" },
  ),
}));

builder.prismaObjectFields(RunNode, (t) => ({
  schedule: t.prismaField({
    type: "Schedule",
    nullable: true,
    description: "The schedule whose fire admitted the run; null for other runs, and once the schedule is deleted.",
    resolve: (query, run, _args, ctx) => (run.scheduleId ? ctx.prisma.schedule.findFirst({ ...query, where: { id: run.scheduleId, ...mine(ctx) } }) : null),
  }),
  fireTime: t.expose("fireTime", { type: "DateTime", nullable: true, description: "For a scheduled run: the fire time it was admitted for." }),
}));

const CreateScheduleInput = builder.inputType("CreateScheduleInput", {
  fields: (t) => ({
    workspaceId: t.id({ required: true }),
    cron: t.string({ description: "A cron expression (5 fields, or 6 with seconds first); exactly one of cron and intervalSeconds." }),
    intervalSeconds: t.int({ description: "Fire every so many seconds, counted from startAt (or the schedule's creation)." }),
    timezone: t.string({ description: "An IANA time zone such as Europe/Berlin; default UTC." }),
    question: t.string({ required: true, description: "What each fire's run is asked; up to 20,000 characters." }),
    agent: t.string({ description: "The agent profile; default `researcher` (with run caps that leave it out, the first profile they allow: RunCapsInput)." }),
    limits: t.field({ type: RunLimitsInput }),
    overlap: t.field({ type: ScheduleOverlapEnum, description: "Default SKIP." }),
    catchUp: t.field({ type: ScheduleCatchUpEnum, description: "Default NONE." }),
    startAt: t.field({ type: "DateTime", description: "No fire before it." }),
    endAt: t.field({ type: "DateTime", description: "No fire after it; must be after startAt." }),
    pauseAfterFailures: t.int({
      description:
        "Pause the schedule (pausedReason, webhook SCHEDULE_PAUSED) when this many of its runs in a row ended FAILED or TIMED_OUT, a fire whose run was refused (recorded FAILED) counting as one such run; checked when the next fire is due, which it then does not admit.",
    }),
  }),
});

const UpdateScheduleInput = builder.inputType("UpdateScheduleInput", {
  description:
    "The fields given replace the schedule's (null clears an optional one); a cron given clears intervalSeconds and the other way round. The next fire is computed again from now. The schedule's fires are then held to the updating key's run caps (runCaps), which its settings must fit.",
  fields: (t) => ({
    id: t.id({ required: true }),
    cron: t.string(),
    intervalSeconds: t.int(),
    timezone: t.string(),
    question: t.string(),
    agent: t.string(),
    limits: t.field({ type: RunLimitsInput }),
    overlap: t.field({ type: ScheduleOverlapEnum }),
    catchUp: t.field({ type: ScheduleCatchUpEnum }),
    startAt: t.field({ type: "DateTime" }),
    endAt: t.field({ type: "DateTime" }),
    pauseAfterFailures: t.int(),
  }),
});

const ScheduleIdInput = builder.inputType("ScheduleIdInput", { fields: (t) => ({ id: t.id({ required: true }) }) });

const success = (name: string) =>
  builder.objectRef<{ schedule: Schedule }>(name).implement({
    fields: (t) => ({ schedule: t.field({ type: ScheduleNode, resolve: (result) => result.schedule }) }),
  });

const TriggerScheduleSuccess = builder.objectRef<{ schedule: Schedule; fire: ScheduleFire }>("TriggerScheduleSuccess").implement({
  fields: (t) => ({
    schedule: t.field({ type: ScheduleNode, resolve: (result) => result.schedule }),
    fire: t.field({ type: ScheduleFireObject, description: "The fire just recorded (its fire time is now).", resolve: (result) => result.fire }),
  }),
});

const DeleteScheduleSuccess = builder.objectRef<{ deletedScheduleId: string }>("DeleteScheduleSuccess").implement({
  fields: (t) => ({ deletedScheduleId: t.exposeID("deletedScheduleId") }),
});

const scheduleId = (input: { id: string | number }) => requireIdOfType(String(input.id), "Schedule", "id");
const optional = <T>(value: T | null | undefined): T | undefined => value ?? undefined;
const errors = (name: string, extra: (typeof WorkspaceArchivedError | typeof ScheduleLimitError)[] = []) => ({
  types: [...extra, ForbiddenError, NotFoundError, ValidationError],
  directResult: true as const,
  union: { name },
});

builder.mutationFields((t) => ({
  createSchedule: t.field({
    type: success("CreateScheduleSuccess"),
    description:
      "Creates a schedule in one of your workspaces (not an archived one); it fires from its next fire time on. A ScheduleLimitError says you already have as many schedules as one principal may.",
    args: { input: t.arg({ type: CreateScheduleInput, required: true }) },
    errors: errors("CreateSchedulePayload", [WorkspaceArchivedError, ScheduleLimitError]),
    resolve: async (_root, { input }, ctx) => ({
      schedule: await ctx.services.schedules.create(ctx.actor, {
        ...input,
        workspaceId: requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId"),
        agent: optional(input.agent),
        overlap: optional(input.overlap),
        catchUp: optional(input.catchUp),
      }),
    }),
  }),
  updateSchedule: t.field({
    type: success("UpdateScheduleSuccess"),
    args: { input: t.arg({ type: UpdateScheduleInput, required: true }) },
    errors: errors("UpdateSchedulePayload"),
    resolve: async (_root, { input }, ctx) => ({ schedule: await ctx.services.schedules.update(ctx.actor, { ...input, id: scheduleId(input) }) }),
  }),
  pauseSchedule: t.field({
    type: success("PauseScheduleSuccess"),
    description: "Stops the schedule's fires until resumeSchedule; idempotent.",
    args: { input: t.arg({ type: ScheduleIdInput, required: true }) },
    errors: errors("PauseSchedulePayload"),
    resolve: async (_root, { input }, ctx) => ({ schedule: await ctx.services.schedules.pause(ctx.actor, scheduleId(input)) }),
  }),
  resumeSchedule: t.field({
    type: success("ResumeScheduleSuccess"),
    description:
      "Fires again from the next fire time after now (fires due while paused are not caught up); idempotent. The schedule then follows the resuming API key: revoked, it pauses the schedule.",
    args: { input: t.arg({ type: ScheduleIdInput, required: true }) },
    errors: errors("ResumeSchedulePayload"),
    resolve: async (_root, { input }, ctx) => ({ schedule: await ctx.services.schedules.resume(ctx.actor, scheduleId(input)) }),
  }),
  deleteSchedule: t.field({
    type: DeleteScheduleSuccess,
    description: "Deletes the schedule and its fires; its runs stay.",
    args: { input: t.arg({ type: ScheduleIdInput, required: true }) },
    errors: errors("DeleteSchedulePayload"),
    resolve: async (_root, { input }, ctx) => {
      await ctx.services.schedules.delete(ctx.actor, scheduleId(input));
      return { deletedScheduleId: String(input.id) };
    },
  }),
  triggerSchedule: t.field({
    type: TriggerScheduleSuccess,
    description:
      "Fires the schedule now (paused or not), with its overlap policy; its next fire time stays as it was. A schedule whose API key was revoked admits nothing: the fire is recorded FAILED and the schedule paused (resume or update it first).",
    args: { input: t.arg({ type: ScheduleIdInput, required: true }) },
    errors: errors("TriggerSchedulePayload"),
    resolve: (_root, { input }, ctx) => ctx.services.schedules.trigger(ctx.actor, scheduleId(input)),
  }),
}));
