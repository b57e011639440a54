// Workspace schedules (issue 41): created, changed, paused, resumed, deleted and fired now by the
// workspace's owner only. Every fire's run is admitted into the schedule's own conversation, so a
// fire's run sees what the schedule's earlier runs said, and the overlap policy is the
// conversation's multitask strategy (one active run per conversation). A schedule follows the API
// key that created, last updated or resumed it: revoked, the key's schedules pause (revoked-keys.ts).
import { Prisma, type PrismaClient, type Schedule, type ScheduleFire } from "../../generated/prisma/client.js";
import { NotFoundError, ScheduleLimitError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { assertKeyMayCancel } from "../runs/interrupt-rights.js";
import type { AgentProfileVersions } from "../capabilities/agent-profile-versions.js";
import { findOpenWorkspace } from "../workspace/workspace-access.js";
import { defaultAgent } from "../runs/capped-admission.js";
import { workspaceArchived } from "./archived-schedules.js";
import { nextFireAfter } from "./fire-times.js";
import { assertFiresWithin, checkSettingsWithin } from "./schedule-caps.js";
import { parseSettings, recurrenceOf, type ScheduleSettingsInput } from "./schedule-input.js";
import type { FireDueOptions, ScheduleFiring } from "./schedule-firing.js";
import { lockPrincipalRow } from "../principal/principal-lock.js";
import { conversationTitle } from "../text/whole-characters.js";

/** MAX_SCHEDULES_PER_PRINCIPAL's default. */
export const MAX_SCHEDULES_DEFAULT = 100;

type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];

export type CreateScheduleInput = { workspaceId: string } & Omit<ScheduleSettingsInput, "agent" | "overlap" | "catchUp"> &
  Partial<Pick<ScheduleSettingsInput, "agent" | "overlap" | "catchUp">>;

/** An update: the fields given replace the schedule's; a cron given clears the interval, and the other way round. */
export type UpdateScheduleInput = { id: string } & Partial<{ [K in keyof ScheduleSettingsInput]: ScheduleSettingsInput[K] | null }>;

export class ScheduleService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      profiles: AgentProfileVersions;
      firing: ScheduleFiring;
      now?: () => Date;
      /** The most schedules one principal may have (MAX_SCHEDULES_PER_PRINCIPAL). */
      maxSchedules?: number;
    },
  ) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  async create(actor: Actor, input: CreateScheduleInput): Promise<Schedule> {
    const now = this.now();
    const settings = parseSettings(
      { ...input, agent: input.agent ?? defaultAgent(actor.runCaps), overlap: input.overlap ?? "SKIP", catchUp: input.catchUp ?? "NONE" },
      { now, createdAt: now },
    );
    this.checkAgent(settings.agent);
    checkOverlap(actor, settings.overlap);
    const runCaps = checkSettingsWithin(settings, actor.runCaps);
    return this.deps.prisma.$transaction(async (tx) => {
      await findOpenWorkspace(tx, actor, input.workspaceId);
      await this.assertRoomFor(tx, actor.principalId);
      const conversation = await tx.conversation.create({
        data: { ownerId: actor.principalId, title: conversationTitle(settings.question) },
        select: { id: true },
      });
      return tx.schedule.create({
        data: {
          ...settings,
          limits: settings.limits ?? undefined,
          runCaps,
          apiKeyId: actor.keyId ?? null,
          ownerId: actor.principalId,
          workspaceId: input.workspaceId,
          conversationId: conversation.id,
          createdAt: now,
        },
      });
    });
  }

  async update(actor: Actor, input: UpdateScheduleInput): Promise<Schedule> {
    return this.deps.prisma.$transaction(async (tx) => {
      const current = await lockOwned(tx, actor, input.id);
      const given = <K extends keyof UpdateScheduleInput>(key: K) => input[key] !== undefined;
      const merged = {
        cron: given("cron") ? input.cron : given("intervalSeconds") && input.intervalSeconds != null ? null : current.cron,
        intervalSeconds: given("intervalSeconds") ? input.intervalSeconds : given("cron") && input.cron != null ? null : current.intervalSeconds,
        timezone: given("timezone") ? input.timezone : current.timezone,
        question: input.question ?? current.question,
        agent: input.agent ?? current.agent,
        limits: given("limits") ? input.limits : (current.limits as ScheduleSettingsInput["limits"]),
        overlap: input.overlap ?? current.overlap,
        catchUp: input.catchUp ?? current.catchUp,
        startAt: given("startAt") ? input.startAt : current.startAt,
        endAt: given("endAt") ? input.endAt : current.endAt,
        pauseAfterFailures: given("pauseAfterFailures") ? input.pauseAfterFailures : current.pauseAfterFailures,
      };
      const settings = parseSettings(merged, { now: this.now(), createdAt: current.createdAt });
      this.checkAgent(settings.agent);
      checkOverlap(actor, settings.overlap);
      // Its fires are held to the caps of the credential that changed it last, and follow its key.
      const runCaps = checkSettingsWithin(settings, actor.runCaps);
      // `limits: null` clears them (the admission's defaults again): a database NULL, not "unchanged".
      // An archived workspace's schedule has no next fire until the workspace is restored (archived-schedules.ts).
      const nextFireAt = (await workspaceArchived(tx, current.workspaceId)) ? null : settings.nextFireAt;
      const data = { ...settings, nextFireAt, limits: settings.limits ?? Prisma.DbNull, runCaps, apiKeyId: actor.keyId ?? null };
      return tx.schedule.update({ where: { id: current.id }, data });
    });
  }

  /** Stops the fires until resumeSchedule. Idempotent. */
  async pause(actor: Actor, id: string): Promise<Schedule> {
    return this.deps.prisma.$transaction(async (tx) => {
      const current = await lockOwned(tx, actor, id);
      if (current.paused) return current;
      return tx.schedule.update({ where: { id }, data: { paused: true, pausedReason: "paused by its owner" } });
    });
  }

  /**
   * Fires again from the next fire after now: the fires due while it was paused are not caught up.
   * Idempotent. Queues nothing itself: each fire is an admission, within its owner's queue. The
   * schedule follows the resuming credential's key from then on (one paused by its key's revocation
   * fires again).
   */
  async resume(actor: Actor, id: string): Promise<Schedule> {
    return this.deps.prisma.$transaction(async (tx) => {
      const current = await lockOwned(tx, actor, id);
      if (!current.paused) return current;
      // Resumed, an interrupting schedule cancels its previous run at its next fire, and its fires
      // admit runs: the resuming credential's run caps must allow them too.
      checkOverlap(actor, current.overlap);
      assertFiresWithin(current, actor.runCaps);
      const now = this.now();
      const nextFireAt = (await workspaceArchived(tx, current.workspaceId)) ? null : nextFireAfter(recurrenceOf(current), now);
      const data = { paused: false, pausedReason: null, nextFireAt, resumedAt: now, apiKeyId: actor.keyId ?? null };
      return tx.schedule.update({ where: { id }, data });
    });
  }

  /** Deletes the schedule and its fires; its runs stay (Run.schedule reads null). */
  async delete(actor: Actor, id: string): Promise<void> {
    const deleted = await this.deps.prisma.schedule.deleteMany({ where: { id, ownerId: actor.principalId } });
    if (deleted.count === 0) throw new NotFoundError("Schedule", id);
  }

  /** Fires now, whatever the schedule's next fire (paused or not); the next fire stays as it was. */
  async trigger(actor: Actor, id: string): Promise<{ schedule: Schedule; fire: ScheduleFire }> {
    if (actor.scopes && !actor.scopes.includes("CANCEL")) {
      const schedule = await this.deps.prisma.schedule.findFirst({ where: { id, ownerId: actor.principalId }, select: { overlap: true } });
      if (!schedule) throw new NotFoundError("Schedule", id);
      checkOverlap(actor, schedule.overlap);
    }
    // The fire's run lies within the schedule's run caps and the triggering credential's.
    const fire = await this.deps.firing.fireNow(id, actor.principalId, (schedule) => assertFiresWithin(schedule, actor.runCaps));
    if (!fire) throw new NotFoundError("Schedule", id);
    return { schedule: await this.deps.prisma.schedule.findUniqueOrThrow({ where: { id } }), fire };
  }

  /** The schedulers' work (scheduler.ts): every due fire, once. */
  fireDue(options?: FireDueOptions): Promise<number> {
    return this.deps.firing.fireDue(options);
  }

  /** When the next schedule is due (null: none is). */
  earliestDue(): Promise<Date | null> {
    return this.deps.firing.earliestDue();
  }

  /**
   * A principal's schedules are bounded: each is a claim on the schedulers' turns. The principal's
   * row is locked for the count, so creates side by side never pass the bound together.
   */
  private async assertRoomFor(tx: Tx, principalId: string): Promise<void> {
    const max = this.deps.maxSchedules ?? MAX_SCHEDULES_DEFAULT;
    await lockPrincipalRow(tx, principalId);
    if ((await tx.schedule.count({ where: { ownerId: principalId } })) >= max) throw new ScheduleLimitError(max);
  }

  private checkAgent(agent: string): void {
    const { names } = this.deps.profiles;
    if (!names.has(agent)) throw new ValidationError([{ field: "agent", message: `is not an agent profile; known: ${[...names].sort().join(", ")}` }]);
  }
}

/** A schedule whose overlap is INTERRUPT cancels its previous run when it fires: a key needs CANCEL to set it up or fire it. */
function checkOverlap(actor: Actor, overlap: string): void {
  if (overlap === "INTERRUPT")
    assertKeyMayCancel(actor, "create, change, resume or trigger a schedule whose overlap is INTERRUPT, which cancels its previous run");
}

/** The actor's schedule, locked for the change (the schedulers skip it meanwhile); NotFoundError otherwise. */
async function lockOwned(tx: Tx, actor: Actor, id: string): Promise<Schedule> {
  const locked = await tx.$queryRawUnsafe<{ id: string }[]>("SELECT id FROM schedule WHERE id = $1 AND owner_id = $2 FOR UPDATE", id, actor.principalId);
  if (locked.length === 0) throw new NotFoundError("Schedule", id);
  return tx.schedule.findUniqueOrThrow({ where: { id } });
}
