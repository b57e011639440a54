// Firing schedules exactly once (issue 41). A scheduler claims one due schedule at a time with
// `FOR UPDATE SKIP LOCKED` and, in that one transaction, admits each due fire's run (idempotency
// key `schedule:<id>@<fireTime>`), records the fire (unique per schedule and fire time) and moves
// `next_fire_at` on. A triggered fire has a key of its own and a fire time no scheduled fire has. Any number of schedulers may run beside each other on PostgreSQL: a claimed
// schedule is skipped by the others, and a scheduler killed mid-fire commits nothing, so the next
// claim fires the same fire times again — never twice, never none. Each fire's answer is published
// as the next version of the publication the schedule's earlier fires published. The owners of due
// schedules take turns, so no principal's schedules hold back another's. A schedule whose API key
// was revoked pauses itself instead of firing (revoked-keys.ts).
import type { Prisma, PrismaClient, Schedule, ScheduleFire, ScheduleFireStatus } from "../../generated/prisma/client.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { DomainError } from "../errors.js";
import { encodeGlobalId } from "../global-id.js";
import type { AdmissionService } from "../runs/admission-service.js";
import type { EventPublisher } from "../../events/topics.js";
import { recordSchedulePausedEvent } from "../webhooks/webhook-events.js";
import { dueFires, nextFireAfter, planFires } from "./fire-times.js";
import { recurrenceOf } from "./schedule-input.js";
import { storedCaps } from "../principal/run-caps.js";
import { templateOf } from "./schedule-caps.js";
import { TERMINAL_STATUSES } from "../runs/stop-reasons.js";
import { WORKSPACE_ARCHIVED_FIRE_REASON, workspaceArchived } from "./archived-schedules.js";
import { KEY_REVOKED_FIRE_REASON, KEY_REVOKED_SQL, pauseForRevokedKey } from "./revoked-keys.js";

/** At most this many fires are recorded per transaction; a longer catch-up continues in the next one. */
export const FIRES_PER_TRANSACTION = 10;
/** The fires kept of each schedule: recording one more deletes its oldest beyond them. */
export const FIRES_KEPT_PER_SCHEDULE = 1_000;
/** A schedule whose transaction failed is left alone this long by this scheduler, so others still fire. */
const RETRY_AFTER_MS = 30_000;
const ACTIVE_STATUSES = ["QUEUED", "RUNNING", "WAITING", "PAUSED"] as const;
const TRANSACTION = { maxWait: 10_000, timeout: 60_000 };

type Tx = Prisma.TransactionClient;

export type FireDueOptions = {
  /** Told of a schedule whose transaction failed (this scheduler retries it later). */
  failed?: (scheduleId: string, error: unknown) => void;
  /** When the calling scheduler started: a fire due since then is late, never missed. */
  runningSince?: Date;
  /** Looked at before each fire: true ends the pass there (a stopping scheduler waits for one fire at most). */
  stopping?: () => boolean;
};
type Outcome = ScheduleFire | "gone" | "paused";
/** The row of a locked schedule: its id, and whether the API key it follows was revoked. */
type Locked = { id: string; key_revoked: boolean };

export class ScheduleFiring {
  /** Schedules whose last transaction failed here, and until when they are left alone. */
  private readonly retryAt = new Map<string, number>();

  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events: EventPublisher;
      admissions: AdmissionService;
      now?: () => Date;
      /** How many fires of each schedule are kept (FIRES_KEPT_PER_SCHEDULE; tests keep fewer). */
      firesKept?: number;
    },
  ) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /**
   * Fires every due schedule (one transaction per schedule and batch of fires); returns how many
   * fires were recorded. The principals with a schedule due take turns: each turn fires the oldest
   * due schedule of each of them, so one principal's many schedules delay another's by at most one
   * fire per turn. A schedule whose transaction fails is reported to `failed` and retried later.
   */
  async fireDue({ failed = () => undefined, runningSince, stopping = () => false }: FireDueOptions = {}): Promise<number> {
    let recorded = 0;
    for (;;) {
      const owners = await this.ownersDue();
      let claims = 0;
      for (const ownerId of owners) {
        if (stopping()) return recorded;
        const claimed: { id?: string } = {};
        try {
          const count = await this.claimAndFire(ownerId, claimed, runningSince);
          if (count === null) continue;
          claims++;
          recorded += count;
        } catch (error) {
          if (!claimed.id) throw error;
          claims++;
          this.retryAt.set(claimed.id, Date.now() + RETRY_AFTER_MS);
          failed(claimed.id, error);
        }
      }
      if (claims === 0) return recorded;
    }
  }

  /** The schedules this scheduler does not leave alone after a failure of theirs. */
  private leftAlone(): string[] {
    return [...this.retryAt].filter(([, until]) => until > Date.now()).map(([id]) => id);
  }

  /** The owners of due schedules, the one whose oldest due schedule is oldest first: this turn's order. */
  private async ownersDue(): Promise<string[]> {
    const rows = await this.deps.prisma.$queryRawUnsafe<{ owner_id: string }[]>(
      `SELECT owner_id FROM schedule
        WHERE NOT paused AND next_fire_at <= $1::timestamptz AND NOT (id = ANY ($2::text[]))
        GROUP BY owner_id ORDER BY min(next_fire_at), owner_id`,
      this.now().toISOString(),
      this.leftAlone(),
    );
    return rows.map((row) => row.owner_id);
  }

  /**
   * The earliest next fire of a schedule that is not paused nor left alone after a failure here:
   * a scheduler sleeps until then (or its poll).
   */
  async earliestDue(): Promise<Date | null> {
    const next = await this.deps.prisma.schedule.findFirst({
      where: { paused: false, nextFireAt: { not: null }, id: { notIn: this.leftAlone() } },
      orderBy: { nextFireAt: "asc" },
      select: { nextFireAt: true },
    });
    return next?.nextFireAt ?? null;
  }

  /**
   * triggerSchedule: one fire now, outside the schedule's times; null when the owner has no such
   * schedule. `check` sees the locked schedule first: what it throws refuses the fire, recording nothing.
   */
  async fireNow(scheduleId: string, ownerId: string, check: (schedule: Schedule) => void = () => undefined): Promise<ScheduleFire | null> {
    const after: AfterCommit = [];
    const fire = await this.deps.prisma.$transaction(async (tx) => {
      const locked = await tx.$queryRawUnsafe<{ id: string }[]>(`SELECT id FROM schedule WHERE id = $1 AND owner_id = $2 FOR UPDATE`, scheduleId, ownerId);
      if (locked.length === 0) return null;
      // Looked up once the schedule is held, in a statement of its own: one that waited for the
      // row (a revocation pausing it) sees that revocation, which the locking statement may not.
      const [key] = await tx.$queryRawUnsafe<Locked[]>(`SELECT id, ${KEY_REVOKED_SQL} AS key_revoked FROM schedule WHERE id = $1`, scheduleId);
      const schedule = await tx.schedule.findUniqueOrThrow({ where: { id: scheduleId } });
      check(schedule);
      const fireTime = await triggeredFireTime(tx, schedule, this.now());
      const outcome = await this.fireAt(tx, schedule, fireTime, after, { manual: true, keyRevoked: key!.key_revoked });
      if (typeof outcome === "string") return null;
      await this.pruneFires(tx, scheduleId);
      return outcome;
    }, TRANSACTION);
    runAfterCommit(after);
    return fire;
  }

  /** Claims the owner's oldest due schedule and records its due fires (a batch); null when none is due. */
  private async claimAndFire(ownerId: string, claimed: { id?: string }, runningSince: Date | undefined): Promise<number | null> {
    const after: AfterCommit = [];
    const recorded = await this.deps.prisma.$transaction(async (tx) => {
      const now = this.now();
      const rows = await tx.$queryRawUnsafe<Locked[]>(
        `SELECT id, ${KEY_REVOKED_SQL} AS key_revoked FROM schedule
          WHERE owner_id = $3 AND NOT paused AND next_fire_at <= $1::timestamptz AND NOT (id = ANY ($2::text[]))
          ORDER BY next_fire_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        now.toISOString(),
        this.leftAlone(),
        ownerId,
      );
      if (rows.length === 0) return null;
      claimed.id = rows[0]!.id;
      const keyRevoked = rows[0]!.key_revoked;
      const schedule = await tx.schedule.findUniqueOrThrow({ where: { id: claimed.id } });
      // Archived since it was given its next fire (a change that raced the archive): it has none now.
      if (await workspaceArchived(tx, schedule.workspaceId)) {
        await tx.schedule.update({ where: { id: schedule.id }, data: { nextFireAt: null } });
        return 0;
      }
      const recurrence = recurrenceOf(schedule);
      const due = dueFires(recurrence, schedule.nextFireAt!, now);
      const plan = planFires(due, schedule.catchUp, now, runningSince);
      const recorded = await firesRecorded(tx, schedule.id, due);
      const entries = [...plan.skip.map(({ fireTime, reason }) => ({ fireTime, skip: reason })), ...plan.admit.map((fireTime) => ({ fireTime, skip: null }))]
        .filter(({ fireTime }) => !recorded.has(fireTime.getTime()))
        .sort((a, b) => a.fireTime.getTime() - b.fireTime.getTime());
      let count = 0;
      for (const entry of entries.slice(0, FIRES_PER_TRANSACTION)) {
        const outcome = entry.skip
          ? await recordFire(tx, schedule.id, entry.fireTime, "SKIPPED", { reason: entry.skip })
          : await this.fireAt(tx, schedule, entry.fireTime, after, { manual: false, keyRevoked });
        if (outcome === "gone") return count;
        if (outcome === "paused") break;
        count++;
      }
      const rest = entries[FIRES_PER_TRANSACTION];
      const nextFireAt = rest ? rest.fireTime : nextFireAfter(recurrence, due.at(-1) ?? now);
      await tx.schedule.update({ where: { id: schedule.id }, data: { nextFireAt } });
      if (count > 0) await this.pruneFires(tx, schedule.id);
      return count;
    }, TRANSACTION);
    runAfterCommit(after);
    return recorded;
  }

  /** Deletes the schedule's fires older than the latest `firesKept`: a frequent schedule's fires do not pile up. */
  private async pruneFires(tx: Tx, scheduleId: string): Promise<void> {
    await tx.$executeRawUnsafe(
      `DELETE FROM schedule_fire WHERE schedule_id = $1 AND fire_time <= (
         SELECT fire_time FROM schedule_fire WHERE schedule_id = $1 ORDER BY fire_time DESC OFFSET $2 LIMIT 1)`,
      scheduleId,
      this.deps.firesKept ?? FIRES_KEPT_PER_SCHEDULE,
    );
  }

  /**
   * One fire, inside the claim's transaction: skipped (archived workspace, an active previous run
   * under SKIP), the schedule paused (its API key revoked, consecutive failures), or its run
   * admitted. A deleted workspace deletes the schedule ("gone"). A triggered fire of a schedule
   * whose key was revoked is recorded FAILED, the schedule paused all the same.
   */
  private async fireAt(
    tx: Tx,
    schedule: Schedule,
    fireTime: Date,
    after: AfterCommit,
    { manual, keyRevoked }: { manual: boolean; keyRevoked: boolean },
  ): Promise<Outcome> {
    const workspace = await tx.workspace.findUnique({ where: { id: schedule.workspaceId }, select: { status: true, deletedAt: true } });
    if (!workspace || workspace.deletedAt) {
      await tx.schedule.delete({ where: { id: schedule.id } });
      return "gone";
    }
    if (keyRevoked) {
      await pauseForRevokedKey(tx, schedule, { events: this.deps.events, after });
      return manual ? recordFire(tx, schedule.id, fireTime, "FAILED", { reason: KEY_REVOKED_FIRE_REASON }) : "paused";
    }
    if (workspace.status === "ARCHIVED") return recordFire(tx, schedule.id, fireTime, "SKIPPED", { reason: WORKSPACE_ARCHIVED_FIRE_REASON });
    if (!manual && (await this.pausedAfterFailures(tx, schedule, after))) return "paused";
    if (schedule.overlap === "SKIP") {
      const active = await tx.run.findFirst({ where: { scheduleId: schedule.id, status: { in: [...ACTIVE_STATUSES] } }, select: { id: true } });
      if (active) {
        return recordFire(tx, schedule.id, fireTime, "SKIPPED", { reason: `the previous scheduled run ${encodeGlobalId("Run", active.id)} is still active` });
      }
    }
    return this.admit(tx, schedule, fireTime, after, manual);
  }

  /** Admits the fire's run; a refusal the admission names (a removed agent profile, …) is recorded FAILED, with nothing of it kept. */
  private async admit(tx: Tx, schedule: Schedule, fireTime: Date, after: AfterCommit, manual: boolean): Promise<ScheduleFire> {
    const idempotencyKey = `schedule:${schedule.id}${manual ? ":triggered" : ""}@${fireTime.toISOString()}`;
    const fireAfter: AfterCommit = [];
    const continuesPublicationId = await publicationOfLastFire(tx, schedule.id);
    await tx.$executeRawUnsafe("SAVEPOINT schedule_fire");
    try {
      // Within the run caps of the credential that created or last updated the schedule.
      const runCaps = storedCaps(schedule.runCaps);
      const run = await this.deps.admissions.admitIn(
        tx,
        { principalId: schedule.ownerId, ...(runCaps ? { runCaps } : {}) },
        {
          ...templateOf(schedule),
          workspaceId: schedule.workspaceId,
          conversationId: schedule.conversationId,
          multitask: schedule.overlap === "INTERRUPT" ? "INTERRUPT" : "ENQUEUE",
          idempotencyKey,
          continuesPublicationId,
        },
        { scheduleId: schedule.id, fireTime },
        fireAfter,
      );
      await tx.$executeRawUnsafe("RELEASE SAVEPOINT schedule_fire");
      after.push(...fireAfter);
      return recordFire(tx, schedule.id, fireTime, "ADMITTED", { runId: run.id });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      await tx.$executeRawUnsafe("ROLLBACK TO SAVEPOINT schedule_fire");
      return recordFire(tx, schedule.id, fireTime, "FAILED", { reason: error.message });
    }
  }

  /**
   * pauseAfterFailures: when the schedule's last N outcomes (since it was last resumed) were all
   * failures — an ended run FAILED or TIMED_OUT, or a fire recorded FAILED (its run refused) — it
   * pauses itself instead of firing, and its owner's webhooks hear SCHEDULE_PAUSED.
   */
  private async pausedAfterFailures(tx: Tx, schedule: Schedule, after: AfterCommit): Promise<boolean> {
    const n = schedule.pauseAfterFailures;
    if (!n) return false;
    const since = schedule.resumedAt ? { fireTime: { gt: schedule.resumedAt } } : {};
    const ended = await tx.run.findMany({
      where: { scheduleId: schedule.id, status: { in: [...TERMINAL_STATUSES] }, ...since },
      orderBy: [{ fireTime: "desc" }, { createdAt: "desc" }],
      take: n,
      select: { id: true, status: true, fireTime: true },
    });
    const refused = await tx.scheduleFire.findMany({ where: { scheduleId: schedule.id, status: "FAILED", ...since }, orderBy: { fireTime: "desc" }, take: n });
    const latest = [
      ...ended.map((run) => ({ at: run.fireTime?.getTime() ?? 0, runId: run.id, failed: run.status === "FAILED" || run.status === "TIMED_OUT" })),
      ...refused.map((fire) => ({ at: fire.fireTime.getTime(), runId: null, failed: true })),
    ]
      .sort((a, b) => b.at - a.at)
      .slice(0, n);
    if (latest.length < n || !latest.every((outcome) => outcome.failed)) return false;
    const pausedReason = `paused after ${n} consecutive failed or timed-out runs or refused fires`;
    await tx.schedule.update({ where: { id: schedule.id }, data: { paused: true, pausedReason } });
    const lastRunId = latest.find((outcome) => outcome.runId)?.runId ?? null;
    await recordSchedulePausedEvent(tx, { ...schedule, pausedReason, lastRunId }, { events: this.deps.events, after });
    return true;
  }
}

/**
 * The publication the schedule's latest published run created or continued: each fire's answer
 * becomes its next version (null before the first answer was published).
 */
async function publicationOfLastFire(tx: Tx, scheduleId: string): Promise<string | null> {
  const published = await tx.runPublication.findFirst({
    where: { outcome: "PUBLISHED", publicationVersionId: { not: null }, run: { scheduleId } },
    orderBy: { run: { fireTime: "desc" } },
    select: { publicationVersionId: true },
  });
  if (!published?.publicationVersionId) return null;
  const version = await tx.publicationVersion.findUnique({ where: { id: published.publicationVersionId }, select: { publicationId: true } });
  return version?.publicationId ?? null;
}

/**
 * A triggered fire's time: now, or the first millisecond after it that is neither one of the
 * schedule's own fire times nor the time of a fire already recorded (two triggers in one millisecond).
 */
async function triggeredFireTime(tx: Tx, schedule: Schedule, now: Date): Promise<Date> {
  const recurrence = recurrenceOf(schedule);
  for (let at = now; ; at = new Date(at.getTime() + 1)) {
    if (nextFireAfter(recurrence, new Date(at.getTime() - 1))?.getTime() === at.getTime()) continue;
    const taken = await tx.scheduleFire.findUnique({ where: { scheduleId_fireTime: { scheduleId: schedule.id, fireTime: at } }, select: { id: true } });
    if (!taken) return at;
  }
}

/** Which of these fire times the schedule already has a fire at (a trigger's, recorded before its times were kept apart): done. */
async function firesRecorded(tx: Tx, scheduleId: string, times: Date[]): Promise<Set<number>> {
  if (times.length === 0) return new Set();
  const fires = await tx.scheduleFire.findMany({ where: { scheduleId, fireTime: { in: times } }, select: { fireTime: true } });
  return new Set(fires.map((fire) => fire.fireTime.getTime()));
}

function recordFire(
  tx: Tx,
  scheduleId: string,
  fireTime: Date,
  status: ScheduleFireStatus,
  { reason = null, runId = null }: { reason?: string | null; runId?: string | null },
): Promise<ScheduleFire> {
  return tx.scheduleFire.create({ data: { scheduleId, fireTime, status, reason, runId } });
}
